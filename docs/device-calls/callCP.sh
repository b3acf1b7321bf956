#!/usr/bin/env bash
# Call CP (run 105): version 15's L2 prefetch in the quad state kernel too (kernel 2q: T > 1, or
# 32-bit inputs, GVA, V != 128 at T = 1; warp 1's lane 0 of each head's first block prefetches the
# slice 50 heads ahead past the first wave). Together: the gate's decode lines, [gpu][frontend],
# memcheck and racecheck of quad lines past one wave; then the step with GDNBENCH_EXP_QUAD_AHEAD=0
# (no prefetch in 2q) against the default, alternated.
set -u
R=$OUT/cp; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cp.tgz cp ); }
B=build-gpu/q
timeout 150 $B/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 150 $B/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1 &
t=$!
pids=()
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 10 $B/gdnbench verify --variants fused_decode --frontend on --T 2 --B 3,200 --H 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/$tool.csv --no-progress > $R/$tool.log 2>&1 & pids+=($!)
done
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"; grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$? $(tail -n 2 $R/tests.log | head -n 1)"; grep -B3 -A10 FAILED $R/tests.log | head -20
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -n 1) | PASS $(grep -c PASS $R/$tool.csv)"; done
step timing
for rep in 1 2; do for a in 0 50; do
  GDNBENCH_EXP_QUAD_AHEAD=$a timeout 40 $B/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64,256 --H 32 --K 128 --V 128 --T 2,8 --h0 on --max-seconds 0.3 --out $R/t_${a}_$rep.csv --no-progress > $R/t_${a}_$rep.log 2>&1; echo "T>1 ahead=$a $rep rc=$? $(grep '^fused' $R/t_${a}_$rep.log | awk '{print $3"/"$4, $(NF-1)}' | tr '\n' ';')"
  GDNBENCH_EXP_QUAD_AHEAD=$a timeout 30 $B/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64,256 --H 16 --HV 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.3 --out $R/gva_${a}_$rep.csv --no-progress > $R/gva_${a}_$rep.log 2>&1; echo "GVA ahead=$a $rep rc=$? $(grep '^fused' $R/gva_${a}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  step "rep $rep ahead $a"
done; done
step done
