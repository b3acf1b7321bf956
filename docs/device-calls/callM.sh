#!/usr/bin/env bash
# Call M (run 25): next/h200-pending3 (main + fused_decode v5 + wy_ut output v4 + prepare v4, the
# scan as on main). Phase 1 correctness, phase 2 timings + ncu, phase 3 sanitizers concurrently.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/m; mkdir -p $R
B=build-gpu/gdnbench
T=build-gpu/gdnbench_tests
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf m.tgz m ); }
step phase 1: tests and gates
timeout 120 $T "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
timeout 60 $T "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
timeout 150 $B verify --suite gate --attention-ref auto --variants wy_ut,fused_conv,unfused_conv,fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step phase 2: timings
timeout 90 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,8192,16384,32768,65536 --dtypes bf16 --out $R/wy.csv --no-progress > $R/wy.log 2>&1; echo "wy rc=$?"; tail -8 $R/wy.log | cut -c1-150
timeout 60 $B run --no-ceilings --variants wy_ut --B 4 --H 64 --K 128 --V 128 --T 8192 --dtypes bf16 --out $R/wy_b4.csv --no-progress > $R/wy_b4.log 2>&1; echo "wy b4 rc=$?"; tail -2 $R/wy_b4.log | cut -c1-150
timeout 60 $B run --no-ceilings --variants wy_ut --B 8 --H 32 --K 256 --V 256 --T 2048 --dtypes bf16 --out $R/wy_k256.csv --no-progress > $R/wy_k256.log 2>&1; echo "wy k256 rc=$?"; tail -2 $R/wy_k256.log | cut -c1-150
timeout 60 $B run --no-ceilings --variants wy_ut --B 1 --H 16 --HV 32 --K 128 --V 128 --T 32768 --dtypes bf16 --out $R/wy_gva.csv --no-progress > $R/wy_gva.log 2>&1; echo "wy gva rc=$?"; tail -2 $R/wy_gva.log | cut -c1-150
timeout 60 $B run --no-ceilings --variants unfused_conv,fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --out $R/conv.csv --no-progress > $R/conv.log 2>&1; echo "conv rc=$?"; tail -7 $R/conv.log | cut -c1-150
step ncu
timeout 70 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut -c 3 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_wy.csv --no-progress > $R/ncu_wy.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)|L2 Cache Throughput" $R/ncu_wy.log | cut -c1-120 | head -16
step phase 3: sanitizers
left=$((565 - (SECONDS-start) - 20)); [ $left -lt 60 ] && left=60
echo "sanitizer budget ${left}s"
S="timeout --signal=INT --kill-after=10 $left compute-sanitizer --print-limit 20"
pids=()
# the prepare byte test split by K and dtype so that each part finishes (run 24's one pass was cut at K = 256)
for k in 64 128 256; do for dt in bf16 fp16; do
  GDNBENCH_TEST_K=$k GDNBENCH_TEST_DTYPE=$dt $S --tool racecheck $T "wy_ut's pipelined prepare kernel*" > $R/rc_t_prep_${k}_$dt.log 2>&1 & pids+=($!)
done; done
$S --tool racecheck $T "wy_ut's pipelined output kernel*" > $R/rc_t_out.log 2>&1 & pids+=($!)
$S --tool memcheck $T "wy_ut's pipelined output kernel*,wy_ut's pipelined prepare kernel*" > $R/mc_t_wy.log 2>&1 & pids+=($!)
for tool in memcheck racecheck; do
  $S --tool $tool $B verify --variants wy_ut --T 1,63,64,65,200,1000 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64,96 --h0 on,off --dtypes bf16 --out $R/${tool}_wy.csv --no-progress > $R/${tool}_wy.log 2>&1 & pids+=($!)
done
SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_VARIANTS=wy_ut,fused_conv,unfused_conv,fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=$left scripts/sanitize_gate.sh $R/gate_san > /dev/null 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for f in $R/rc_t_*.log $R/mc_t_wy.log $R/*check_wy.log; do echo "$(basename $f): $(grep -E 'SUMMARY' $f | tail -1) | $(grep -E '^test cases|All tests' $f | tail -1)"; done
cat $R/gate_san/summary.txt
step done
