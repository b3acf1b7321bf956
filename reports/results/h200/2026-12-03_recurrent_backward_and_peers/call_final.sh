#!/usr/bin/env bash
# recurrent's backward on the GPU (tests, gate lines, memcheck, two timings), then the headline
# timings with the peers in the same call (scripts/gpu_timing_with_peers.sh).
set -uo pipefail
R=$OUT/r; mkdir -p $R/bwd build && tar -xJf .dev/bin.tar.xz -C build
B=$R/bwd; t0=$(date +%s)
timeout 150 build/gdnbench_tests "[gpu][backward]" > $B/tests.log 2>&1; echo "bwd tests rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $B/tests.log
grep -m2 -A14 "FAILED" $B/tests.log | head -40
t0=$(date +%s)
timeout 120 build/gdnbench verify --suite gate --variants recurrent --out $B/gate_recurrent.csv --no-progress > $B/gate.log 2>&1
echo "gate recurrent rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $B/gate.log; grep -c "bwd.*PASS\|fwdbwd.*PASS" $B/gate.log
t0=$(date +%s)
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 build/gdnbench verify --variants recurrent --pass bwd,fwdbwd \
  --K 32,128,256 --V 40 --T 65 --dtypes bf16 --h0 on --no-progress --out $B/memcheck.csv > $B/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $B/memcheck.log
timeout 90 build/gdnbench run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants recurrent \
  --pass fwd,bwd,fwdbwd --B 1 --T 1024,4096 --out $B/time_recurrent_bwd.csv > $B/time.log 2>&1; echo "bwd timing rc=$?"
grep "recurrent" $B/time.log | head -8
PEERS_S=200 EXT_S=110 timeout 330 scripts/gpu_timing_with_peers.sh $R/peers > $R/peers_stdout.log 2>&1; echo "peers rc=$?"
tail -30 $R/peers_stdout.log
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
