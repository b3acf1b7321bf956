#!/usr/bin/env bash
# Call Q (run 28): main (d4a73e2) racecheck gap of issue 9 + large-index wy_ut line;
# next/wy-ut-scan8 tests, timing against main, ncu of the 8-warp scan.
set -u
R=$OUT/q; mkdir -p $R
M=build-gpu/main/gdnbench
S8=build-gpu/s8/gdnbench
S8T=build-gpu/s8/gdnbench_tests
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf q.tgz q ); }
step phase 1: scan8 byte test and timing A/B
timeout 60 $S8T "wy_ut's 8-warp scan writes version 2's U and entering states and hT bit for bit" > $R/s8_byte.log 2>&1; echo "s8 byte rc=$?"; tail -2 $R/s8_byte.log
grep -B3 -A12 "FAILED" $R/s8_byte.log | head -30
for b in main s8; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --dtypes bf16 --out $R/wy_$b.csv --no-progress > $R/wy_$b.log 2>&1; echo "wy $b rc=$?"; tail -5 $R/wy_$b.log | cut -c1-150
done
timeout 40 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:"state" -c 1 $S8 run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_s8.csv --no-progress > $R/ncu_s8.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issued Warp" $R/ncu_s8.log | cut -c1-120 | head -10
step phase 2: sanitizers and gates concurrently
left=$((580 - (SECONDS-start) - 15)); [ $left -lt 60 ] && left=60
echo "budget ${left}s"
pids=()
for v in wy_ut unfused_conv fused_conv; do
  GDNBENCH_BUILD=build-gpu/main SANITIZE_TOOLS=racecheck SANITIZE_VARIANTS=$v SANITIZE_TIMEOUT=$left scripts/sanitize_gate.sh $R/race_gate_main_$v > /dev/null 2>&1 & pids+=($!)
done
: > $R/empty.ini
( timeout $left $M verify --suite $R/empty.ini --dtypes bf16 --h0 on --gdn-ref sampled --variants wy_ut --B 1 --T 65537 --H 2 --HV 256 --K 64 --V 128 --out $R/large_wy_main.csv --no-progress > $R/large_wy_main.log 2>&1; echo "large rc=$?" >> $R/large_wy_main.log ) & pids+=($!)
( timeout 150 $S8T "[gpu][wy_ut]" > $R/s8_tests_wy.log 2>&1; echo "rc=$?" >> $R/s8_tests_wy.log
  timeout 100 $S8T "[gpu][frontend]" > $R/s8_tests_fe.log 2>&1; echo "rc=$?" >> $R/s8_tests_fe.log
  timeout 150 $S8 verify --suite gate --attention-ref auto --variants wy_ut,unfused_conv,fused_conv --out $R/s8_gate.csv --no-progress > $R/s8_gate.log 2>&1; echo "rc=$?" >> $R/s8_gate.log ) & pids+=($!)
SAN="timeout --signal=INT --kill-after=10 $left compute-sanitizer --print-limit 20"
for K in 64 128 256; do
  ( GDNBENCH_TEST_K=$K $SAN --tool racecheck $S8T "wy_ut's 8-warp scan writes version 2's U and entering states and hT bit for bit" > $R/s8_rc_byte_K$K.log 2>&1 ) & pids+=($!)
done
$SAN --tool memcheck $S8T "wy_ut's 8-warp scan writes version 2's U and entering states and hT bit for bit" > $R/s8_mc_byte.log 2>&1 & pids+=($!)
for tool in memcheck racecheck synccheck; do
  $SAN --tool $tool $S8 verify --variants wy_ut --T 1,63,64,65,200,1000 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64,96 --h0 on,off --dtypes bf16 --out $R/s8_${tool}_wy.csv --no-progress > $R/s8_${tool}_wy.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
tail -2 $R/large_wy_main.log
cat $R/race_gate_main_*/summary.txt
for f in $R/s8_tests_wy.log $R/s8_tests_fe.log $R/s8_gate.log; do echo "$(basename $f): $(tail -2 $f | tr '\n' ' ')"; done
grep -E ",FAIL,|,ERROR," $R/s8_gate.csv | head -4 | cut -c1-200
for f in $R/s8_rc_byte_K*.log $R/s8_mc_byte.log $R/s8_*check_wy.log; do echo "$(basename $f): $(grep -E 'SUMMARY' $f | tail -1) | $(grep -E '^test cases|All tests|passed,' $f | tail -1)"; done
step done
