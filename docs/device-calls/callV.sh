#!/usr/bin/env bash
# Call V (run 33): next/decode-fe-rows with the two-wave rule (4 rows per front-end block only when
# one row per block would take more than two waves): tests, gate, timing alternated, sanitizers of
# the 4-row shape.
set -u
R=$OUT/v; mkdir -p $R
F=build-gpu/fr/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf v.tgz v ); }
step tests and gate
timeout 100 build-gpu/fr/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A10 "FAILED" $R/tests_fe.log | head -30
timeout 60 $F verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step timing
for rep in 1 2; do for b in main fr; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
done; done
step sanitizers
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --print-limit 20 $F verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1 --B 515 --H 4 --HV 8 --K 128 --V 128 --h0 on --dtypes bf16,fp32 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -1 $R/$tool.log)"; done
step done
