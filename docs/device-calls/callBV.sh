#!/usr/bin/env bash
# Call BV (run 85): main 29e4a6b (fused_decode version 13) against 958925b (version 12, base): the
# front-end tests, the gate's decode lines, memcheck and racecheck on quad shapes, timing
# alternated over B and T, both pools.
set -u
R=$OUT/bv; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bv.tgz bv ); }
step tests, gate and sanitizers
timeout 150 build-gpu/v13/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1 &
t=$!
pids=()
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v13/gdnbench verify --variants fused_decode --frontend on --T 1,2,8 --B 5,200 --H 2 --HV 4 --K 100,128 --V 68,72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_q.csv --no-progress > $R/${tool}_q.log 2>&1 & pids+=($!)
done
timeout 60 build-gpu/v13/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v13.csv --no-progress > $R/gate_v13.log 2>&1; echo "gate rc=$? $(tail -n 1 $R/gate_v13.log)"
wait $t; echo "tests rc=$?"; tail -n 2 $R/tests_fe.log | head -c 400
grep -B3 -A8 "FAILED" $R/tests_fe.log | head -c 3000
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool q: $(grep SUMMARY $R/${tool}_q.log | tail -n 1) | $(tail -n 1 $R/${tool}_q.log) | cases $(grep -c PASS $R/${tool}_q.csv)"; done
step timing
for rep in 1 2; do for b in base v13; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 13 $R/dec_${b}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4,8 --h0 on --max-seconds 0.5 --out $R/dect_${b}_$rep.csv --no-progress > $R/dect_${b}_$rep.log 2>&1; echo "T $b $rep rc=$? $(grep '^fused' $R/dect_${b}_$rep.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done; done
step done
