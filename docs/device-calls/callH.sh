#!/usr/bin/env bash
# Call H. Phase 1, correctness (passes concurrently, no timings): racecheck of chunked's reduced gate
# split over T x dtype; memcheck, initcheck, synccheck of the front-end variants; fused_decode's
# tests, gate, racecheck and memcheck. Phase 2, timings (one process at a time).
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/h; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf h.tgz h ); }
step phase 1
pids=()
for T in 1 17 65; do for dt in bf16 fp32; do
  timeout --signal=INT --kill-after=15 270 compute-sanitizer --tool racecheck --error-exitcode 99 --print-limit 100 $B verify --suite build-gpu/gate_reduced.ini --variants chunked --T $T --dtypes $dt --frontend off --no-progress --out $R/race_chunked_T${T}_$dt.csv > $R/race_chunked_T${T}_$dt.log 2>&1 &
  pids+=($!)
done; done
SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_VARIANTS=unfused_conv,fused_conv,fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=200 scripts/sanitize_gate.sh $R/fe_sanitize > /dev/null 2>&1 &
pids+=($!)
SANITIZE_TOOLS=racecheck SANITIZE_PER_VARIANT=1 SANITIZE_VARIANTS=fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=200 scripts/sanitize_gate.sh $R/dec_race > /dev/null 2>&1 &
pids+=($!)
timeout 200 compute-sanitizer --tool racecheck --print-limit 5 $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,8 --B 64 --H 2 --HV 32 --K 128,256 --V 128 --h0 on --dtypes bf16 --out $R/rc_dec_multislice.csv --no-progress > $R/rc_dec_multislice.log 2>&1 &
pids+=($!)
timeout 200 compute-sanitizer --tool memcheck --print-limit 5 $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 4 --K 64,128,256 --V 36,64,70 --h0 on --dtypes bf16,fp32 --out $R/mc_dec.csv --no-progress > $R/mc_dec.log 2>&1; echo "mc dec rc=$? $(grep 'ERROR SUMMARY' $R/mc_dec.log | tail -1)"; tail -1 $R/mc_dec.log
timeout 150 build-gpu/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests.log
timeout 150 $B verify --suite gate --attention-ref auto --variants fused_decode,fused_decode_bf16state --out $R/gate_dec.csv --no-progress > $R/gate_dec.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate_dec.log
for p in "${pids[@]}"; do wait $p; done
echo "rc multislice: $(grep 'RACECHECK SUMMARY' $R/rc_dec_multislice.log | tail -1) | $(tail -1 $R/rc_dec_multislice.log)"
for f in $R/race_chunked_*.log; do echo "$(basename $f): $(grep -E 'RACECHECK SUMMARY' $f | tail -1) | $(tail -1 $f)"; done
cat $R/fe_sanitize/summary.txt $R/dec_race/summary.txt
step phase 2: decode timings
timeout 45 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -9 $R/dec.log
timeout 50 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 3 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "decode_|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | head -12
step fixed-budget lines
timeout 80 $B run --suite build-gpu/fixed_budget.ini --attention-ref sampled --out $R/fixed_budget.csv --no-progress > $R/fixed_budget.log 2>&1; echo "fixed rc=$?"; tail -14 $R/fixed_budget.log
step done
