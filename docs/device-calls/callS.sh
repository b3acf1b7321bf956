#!/usr/bin/env bash
# Call S (run 30): next/fused-conv-v4 (fused_conv on wy_ut version 4's prepare and output with the
# front end). Correctness, timing against unfused_conv, ncu, then sanitizers concurrently.
set -u
export GDNBENCH_BUILD=build-gpu/fc4
R=$OUT/s; mkdir -p $R
B=build-gpu/fc4/gdnbench
T=build-gpu/fc4/gdnbench_tests
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf s.tgz s ); }
step phase 1: tests and gate
timeout 90 $T "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A10 "FAILED" $R/tests_fe.log | head -30
timeout 60 $B verify --suite gate --attention-ref auto --variants unfused_conv,fused_conv --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step phase 2: timing
timeout 60 $B run --no-ceilings --variants unfused_conv,fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --out $R/fe.csv --no-progress > $R/fe.log 2>&1; echo "fe rc=$?"; tail -7 $R/fe.log | cut -c1-150
timeout 40 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut -c 3 $B run --no-ceilings --variants fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu.csv --no-progress > $R/ncu.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu.log | cut -c1-120
step phase 3: tests wy_ut and sanitizers
timeout 120 $T "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
left=$((575 - (SECONDS-start) - 15)); [ $left -lt 60 ] && left=60
echo "sanitizer budget ${left}s"
S="timeout --signal=INT --kill-after=10 $left compute-sanitizer --print-limit 20"
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  $S --tool $tool $B verify --variants fused_conv --frontend on --T 8,65,200 --B 2 --H 2 --HV 4 --K 64,128 --V 64 --h0 on,off --dtypes bf16,fp16 --out $R/${tool}_fc.csv --no-progress > $R/${tool}_fc.log 2>&1 & pids+=($!)
done
$S --tool racecheck $T "fused_conv's o, hT and conv caches equal unfused_conv's whatever its blocks per head" > $R/rc_t_blocks.log 2>&1 & pids+=($!)
$S --tool memcheck $T "fused_conv's o, hT and conv caches equal unfused_conv's whatever its blocks per head" > $R/mc_t_blocks.log 2>&1 & pids+=($!)
SANITIZE_TOOLS=racecheck SANITIZE_VARIANTS=fused_conv SANITIZE_TIMEOUT=$left scripts/sanitize_gate.sh $R/race_gate > /dev/null 2>&1 & pids+=($!)
SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_VARIANTS=fused_conv,wy_ut SANITIZE_TIMEOUT=$((left / 3)) scripts/sanitize_gate.sh $R/gate_san > /dev/null 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for f in $R/*_fc.log $R/rc_t_blocks.log $R/mc_t_blocks.log; do echo "$(basename $f): $(grep -E 'SUMMARY' $f | tail -1) | $(grep -E '^test cases|All tests|passed,' $f | tail -1)"; done
cat $R/race_gate/summary.txt $R/gate_san/summary.txt
step done
