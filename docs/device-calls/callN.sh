#!/usr/bin/env bash
# Call N (run 26): next/h200-pending4 = main + fused_decode version 6 + the K = 128 output ring +
# the column-owning scan. Phase 1 correctness, phase 2 timings and ncu (the wy_ut kernels' stall
# profile), phase 3 sanitizers concurrently, time-boxed to what is left of the call.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/n; mkdir -p $R
B=build-gpu/gdnbench
T=build-gpu/gdnbench_tests
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf n.tgz n ); }
step phase 1: tests and gates
timeout 60 $T "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A8 "FAILED" $R/tests_fe.log | head -24
timeout 100 $T "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
grep -B3 -A8 "FAILED" $R/tests_wy.log | head -24
timeout 120 $B verify --suite gate --attention-ref auto --variants wy_ut,unfused_conv,fused_conv,fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
grep -E ",FAIL,|,ERROR," $R/gate.csv | cut -d, -f10,14-22,31-32 | head -6
step phase 2: timings
timeout 40 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -9 $R/dec.log | cut -c1-150
timeout 60 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,8192,16384,32768,65536 --dtypes bf16 --out $R/wy.csv --no-progress > $R/wy.log 2>&1; echo "wy rc=$?"; tail -7 $R/wy.log | cut -c1-150
timeout 30 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 1 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | cut -c1-120 | head -5
timeout 70 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:gdn_wy_ut -c 3 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_wy.csv --no-progress > $R/ncu_wy.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued" $R/ncu_wy.log | cut -c1-120 | head -16
step phase 3: sanitizers
left=$((575 - (SECONDS-start) - 15)); [ $left -lt 60 ] && left=60
echo "sanitizer budget ${left}s"
S="timeout --signal=INT --kill-after=10 $left compute-sanitizer --print-limit 20"
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  ( $S --tool $tool $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 2 --K 64,100,128 --V 36,64,70,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_dec_a.csv --no-progress > $R/${tool}_dec_a.log 2>&1
    $S --tool $tool $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,8 --B 64 --H 32 --HV 32 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/${tool}_dec_b.csv --no-progress > $R/${tool}_dec_b.log 2>&1 ) & pids+=($!)
done
for tool in memcheck racecheck; do
  $S --tool $tool $B verify --variants wy_ut --T 1,63,64,65,200,1000 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64,96 --h0 on,off --dtypes bf16 --out $R/${tool}_wy.csv --no-progress > $R/${tool}_wy.log 2>&1 & pids+=($!)
done
$S --tool racecheck $T "wy_ut's pipelined output kernel*" > $R/rc_t_out.log 2>&1 & pids+=($!)
$S --tool memcheck $T "wy_ut's pipelined output kernel*,wy_ut's column-owning scan*" > $R/mc_t_wy.log 2>&1 & pids+=($!)
for v in wy_ut unfused_conv fused_conv fused_decode fused_decode_bf16state; do
  SANITIZE_TOOLS=racecheck SANITIZE_VARIANTS=$v SANITIZE_TIMEOUT=$left scripts/sanitize_gate.sh $R/race_gate_$v > /dev/null 2>&1 & pids+=($!)
done
SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_VARIANTS=wy_ut,unfused_conv,fused_conv,fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=$((left / 3)) scripts/sanitize_gate.sh $R/gate_san > /dev/null 2>&1 & pids+=($!)
: > $R/empty.ini
( timeout $left $B verify --suite $R/empty.ini --dtypes bf16 --h0 on --gdn-ref sampled --variants wy_ut --B 1 --T 65537 --H 2 --HV 256 --K 64 --V 128 --out $R/large_wy.csv --no-progress > $R/large_wy.log 2>&1; echo "large rc=$?" >> $R/large_wy.log ) & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for f in $R/rc_t_out.log $R/mc_t_wy.log $R/*check_wy.log $R/*_dec_?.log; do echo "$(basename $f): $(grep -E 'SUMMARY' $f | tail -1) | $(grep -E '^test cases|All tests|passed,' $f | tail -1)"; done
tail -2 $R/large_wy.log
cat $R/race_gate_*/summary.txt $R/gate_san/summary.txt
step done
