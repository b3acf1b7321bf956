#!/usr/bin/env bash
# Call BR (run 81): fused_decode version 12 (next/decode-pdl-order 3bc9a17: the quad state kernel
# by rule, the stream kernel triggered at the front end's exit from 8 slices per SM) against main
# 6316810 (base): the front-end tests, the gate's decode lines, timing alternated over B and T,
# the four sanitizers on quad and stream shapes.
set -u
R=$OUT/br; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf br.tgz br ); }
step tests and gate
timeout 120 build-gpu/v12/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -n 2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -40
timeout 60 build-gpu/v12/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v12.csv --no-progress > $R/gate_v12.log 2>&1; echo "gate rc=$? $(tail -n 1 $R/gate_v12.log)"
step timing
for rep in 1 2; do for b in base v12; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 13 $R/dec_${b}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4,8 --h0 on --max-seconds 0.5 --out $R/dect_${b}_$rep.csv --no-progress > $R/dect_${b}_$rep.log 2>&1; echo "T $b $rep rc=$? $(grep '^fused' $R/dect_${b}_$rep.log | awk '{print $1, $4, $(NF-1)}' | tr '\n' ';')"
done; done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v12/gdnbench verify --variants fused_decode --frontend on --T 1,2,8 --B 5,200 --H 2 --HV 4 --K 100,128 --V 68,72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_q.csv --no-progress > $R/${tool}_q.log 2>&1 & pids+=($!)
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v12/gdnbench verify --variants fused_decode_bf16state --frontend on --T 1,3 --B 150,300 --H 2 --HV 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/${tool}_s.csv --no-progress > $R/${tool}_s.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do for w in q s; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -n 1) | $(tail -n 1 $R/${tool}_$w.log) | cases $(grep -c PASS $R/${tool}_$w.csv)"; done; done
step done
