#!/usr/bin/env bash
# Call CD (run 93): main 7f13135 (fused_decode version 14 everywhere its shape holds) as it lands:
# the whole gate and every [gpu] test, memcheck and racecheck on one-wave quad_fe shapes; then this
# machine's copy rate and the decode figures over B with the ceilings (report_decode_v14.md), with
# each L2 flush; and sf (the quad_fe kernel's slot load first, next/decode-quad-fe-knobs) against main.
set -u
R=$OUT/cd; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cd.tgz cd ); }
B=build-gpu/main
step gate, tests, sanitizers
timeout 280 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 280 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
pids=()
for tool in memcheck racecheck; do
  timeout 280 compute-sanitizer --tool $tool --print-limit 20 $B/gdnbench verify --variants fused_decode --frontend on --T 1 --B 1,3,64 --H 4 --K 128 --V 128 --h0 on,off --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/${tool}.log | tail -n 1) | $(tail -n 1 $R/${tool}.log) | PASS $(grep -c PASS $R/${tool}.csv)"; done
step figures
build-gpu/probe_flush | tee $R/probe_flush.txt
for mode in write clean; do
  timeout 90 $B/gdnbench run --l2-flush $mode --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/decode_v14_$mode.csv --no-progress > $R/decode_v14_$mode.log 2>&1; echo "decode $mode rc=$? $(grep '^fused' $R/decode_v14_$mode.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  grep ceilings $R/decode_v14_$mode.log
done
step slot first
for rep in 1 2; do for b in main sf; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 8,16,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/sf_${b}_$rep.csv --no-progress > $R/sf_${b}_$rep.log 2>&1; echo "sf $b $rep rc=$? $(grep '^fused' $R/sf_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
