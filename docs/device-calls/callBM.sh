#!/usr/bin/env bash
# Call BM (run 76): the vector decode front end with whole-sector stores from 2 blocks per SM on
# (v12) against main (base): tests, the gate's decode lines, timing alternated, memcheck and
# racecheck on a whole-sector shape.
set -u
R=$OUT/bm; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bm.tgz bm ); }
step tests and gate
timeout 60 build-gpu/v12/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 40 build-gpu/v12/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v12.csv --no-progress > $R/gate_v12.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v12.log)"
step timing
for rep in 1 2; do for b in base v12; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -11 $R/dec_${b}_$rep.log | head -10 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step sanitizers
pids=()
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v12/gdnbench verify --variants fused_decode --frontend on --T 1,3 --B 600 --H 2 --HV 4 --K 64 --V 64 --h0 on --dtypes bf16 --out $R/${tool}_ws.csv --no-progress > $R/${tool}_ws.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool ws: $(grep SUMMARY $R/${tool}_ws.log | tail -1) | $(tail -n 1 $R/${tool}_ws.log) | cases $(grep -c PASS $R/${tool}_ws.csv)"; done
step done
