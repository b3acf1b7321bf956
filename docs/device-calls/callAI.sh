#!/usr/bin/env bash
# Call AI (run 46): wy_ut's scan version 5 (one product layer per chunk: M_{n-1} = W_n K_{n-1}^T,
# la) against main: tests, verify, the gate's wy_ut and front-end lines, timing alternated, ncu of
# the scan at 16K, sanitizers.
set -u
R=$OUT/ai; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ai.tgz ai ); }
step tests and gate
timeout 150 build-gpu/la/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
grep -B3 -A14 "FAILED" $R/tests_wy.log | head -40
timeout 60 build-gpu/la/gdnbench verify --variants wy_ut --T 1,65,300,1000 --H 2 --HV 2,4 --K 64,128 --V 64,96 --h0 on,off --dtypes bf16,fp16 --out $R/verify_small.csv --no-progress > $R/verify_small.log 2>&1; echo "verify small rc=$?"; tail -1 $R/verify_small.log
timeout 150 build-gpu/la/gdnbench verify --suite gate --variants wy_ut,fused_conv,unfused_conv --out $R/gate_la.csv --no-progress > $R/gate_la.log 2>&1; echo "gate la rc=$?"; tail -1 $R/gate_la.log
grep -h FAIL $R/gate_la.csv $R/verify_small.csv | head -5 | cut -c1-400
step timing
for rep in 1 2; do for b in main la; do
  timeout 60 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -5 $R/wy_${b}_$rep.log | head -4 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step ncu
for b in main la; do
timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:"wy_ut.*state" -c 1 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_${b}_T16K.log 2>&1; echo "ncu $b rc=$?"; grep -E "Duration|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued" $R/ncu_${b}_T16K.log | head -5
done
step tests frontend
timeout 150 build-gpu/la/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A14 "FAILED" $R/tests_fe.log | head -30
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/la/gdnbench verify --variants wy_ut --T 1,65,300 --B 1 --H 2 --HV 2,4 --K 64,128 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
