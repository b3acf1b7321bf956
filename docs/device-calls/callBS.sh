#!/usr/bin/env bash
# Call BS (run 82): main c219c4c (fused_decode version 12; its kernels are 29f7f5e's) as it lands: the whole gate and every
# [gpu] test, then the decode step over B = 1..256 and T = 2, 4, 8 (both pools, two repetitions).
set -u
R=$OUT/bs; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bs.tgz bs ); }
B=build-gpu/final
step gate and tests
timeout 330 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 330 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
wait $g; echo "gate rc=$? $(tail -n 1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$?"; tail -n 2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step timing
for rep in 1 2; do
  timeout 30 $B/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_$rep.csv --no-progress > $R/dec_$rep.log 2>&1; echo "dec $rep rc=$? $(tail -n 13 $R/dec_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done
step done
