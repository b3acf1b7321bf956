#!/usr/bin/env bash
# Call BB (run 65): fused_decode version 9 as it would land (branch next/decode-lane-warps: the
# lane kernel at K = 128 in 2-warp blocks, 6 per SM, except one-wave grids; v9) against main
# (base): tests, the gate's decode lines, timing alternated over B, the four sanitizers on the
# 2-warp instance (B x HV = 1200 heads) and on the small shapes.
set -u
R=$OUT/bb; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bb.tgz bb ); }
step tests and gate
timeout 100 build-gpu/v9/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -20
timeout 60 build-gpu/v9/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v9.csv --no-progress > $R/gate_v9.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v9.log)"
step timing
for rep in 1 2; do for b in base v9; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
timeout 40 build-gpu/v9/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1,2,4 --h0 on --out $R/dec_v9_gva.csv --no-progress > $R/dec_v9_gva.log 2>&1; echo "gva v9 rc=$? $(grep '^fused' $R/dec_v9_gva.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
timeout 40 build-gpu/base/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1,2,4 --h0 on --out $R/dec_base_gva.csv --no-progress > $R/dec_base_gva.log 2>&1; echo "gva base rc=$? $(grep '^fused' $R/dec_base_gva.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v9/gdnbench verify --variants fused_decode --frontend on --T 1,3,8 --B 300 --H 2 --HV 4 --K 64,100,128 --V 36,72,128 --h0 on --dtypes bf16 --out $R/${tool}_many.csv --no-progress > $R/${tool}_many.log 2>&1 & pids+=($!)
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v9/gdnbench verify --variants fused_decode --frontend on --T 1,2 --B 3 --H 2 --HV 4 --K 128 --V 72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_small.csv --no-progress > $R/${tool}_small.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do for w in many small; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -1) | $(tail -n 1 $R/${tool}_$w.log)"; done; done
step done
