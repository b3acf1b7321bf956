#!/usr/bin/env bash
# Call L (run 24): next/h200-pending2 at 7d472ec (wy_ut output v4 + prepare v4 + scan widths,
# fused_decode v5 with PDL). Phase 1 correctness, phase 2 timings + ncu (GPU quiet), phase 3
# sanitizers concurrently, time-boxed to what is left of the call.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/l; mkdir -p $R
B=build-gpu/gdnbench
T=build-gpu/gdnbench_tests
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf l.tgz l ); }
step phase 1: tests and gates
timeout 120 $T "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -3 $R/tests_wy.log
timeout 60 $T "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -3 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_wy.log $R/tests_fe.log | head -40
timeout 150 $B verify --suite gate --attention-ref auto --variants wy_ut,fused_conv,unfused_conv,fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -2 $R/gate.log
grep -E "FAIL|ERROR" $R/gate.csv | head -10
step phase 2: timings
timeout 90 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,8192,16384,32768,65536 --dtypes bf16 --out $R/wy.csv --no-progress > $R/wy.log 2>&1; echo "wy rc=$?"; tail -8 $R/wy.log
timeout 40 $B run --no-ceilings --variants wy_ut --B 4 --H 64 --K 128 --V 128 --T 8192 --dtypes bf16 --out $R/wy_b4.csv --no-progress > $R/wy_b4.log 2>&1; echo "wy b4 rc=$?"; tail -3 $R/wy_b4.log
timeout 40 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -10 $R/dec.log
timeout 40 $B run --graph --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_graph.csv --no-progress > $R/dec_graph.log 2>&1; echo "dec graph rc=$?"; tail -10 $R/dec_graph.log
step ncu
timeout 70 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats -k regex:gdn_wy_ut -c 3 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_wy.csv --no-progress > $R/ncu_wy.log 2>&1; grep -E "gdn_wy|Duration|DRAM Throughput|Compute \(SM\)|Grid Size|Registers Per|L2 Cache Throughput" $R/ncu_wy.log | head -24
timeout 40 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 2 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "decode|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | head -10
step phase 3: sanitizers
left=$((560 - (SECONDS-start) - 25)); [ $left -lt 60 ] && left=60
echo "sanitizer budget ${left}s"
S="timeout --signal=INT --kill-after=10 $left compute-sanitizer --print-limit 20"
pids=()
$S --tool racecheck $T "wy_ut's pipelined output kernel*" > $R/rc_t_out.log 2>&1 & pids+=($!)
$S --tool racecheck $T "wy_ut's pipelined prepare kernel*" > $R/rc_t_prep.log 2>&1 & pids+=($!)
$S --tool racecheck $T "wy_ut's scan gives the same bytes with 16- and 32-column blocks" > $R/rc_t_scan.log 2>&1 & pids+=($!)
$S --tool memcheck $T "wy_ut's pipelined output kernel*,wy_ut's pipelined prepare kernel*,wy_ut's scan gives the same bytes with 16- and 32-column blocks" > $R/mc_t_wy.log 2>&1 & pids+=($!)
for tool in memcheck racecheck; do
  $S --tool $tool $B verify --variants wy_ut --T 1,63,64,65,200,1000 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64,96 --h0 on,off --dtypes bf16 --out $R/${tool}_wy.csv --no-progress > $R/${tool}_wy.log 2>&1 & pids+=($!)
done
for tool in memcheck racecheck initcheck synccheck; do
  ( $S --tool $tool $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 4 --K 64,128,256 --V 36,64,70 --h0 on --dtypes bf16,fp32 --out $R/${tool}_dec_a.csv --no-progress > $R/${tool}_dec_a.log 2>&1
    $S --tool $tool $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,8 --B 64 --H 2 --HV 32 --K 64,128 --V 128 --h0 on --dtypes bf16 --out $R/${tool}_dec_b.csv --no-progress > $R/${tool}_dec_b.log 2>&1 ) & pids+=($!)
done
SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_VARIANTS=wy_ut,fused_conv,unfused_conv SANITIZE_TIMEOUT=$left scripts/sanitize_gate.sh $R/wy_gate_san > /dev/null 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for f in $R/rc_t_*.log $R/mc_t_wy.log $R/*_wy.log $R/*_dec_?.log; do echo "$(basename $f): $(grep -E 'SUMMARY' $f | tail -1) | $(tail -1 $f)"; done
cat $R/wy_gate_san/summary.txt
step done
