#!/usr/bin/env bash
# Call AB (run 39): fused_decode version 8 as landed (bf16 pool: stream from 4 slices per SM, else
# split; float32 pool: version 5) against main: tests, gate, timing alternated, sanitizers.
set -u
R=$OUT/ab; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ab.tgz ab ); }
step tests and gate
timeout 150 build-gpu/v8/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -40
timeout 60 build-gpu/v8/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v8.csv --no-progress > $R/gate_v8.log 2>&1; echo "gate v8 rc=$?"; tail -1 $R/gate_v8.log
step timing
for rep in 1 2; do for b in main v8; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
done; done
step sanitizers
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  timeout 110 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v8/gdnbench verify --variants fused_decode_bf16state --frontend on --T 1,3,8 --B 5,300 --H 2 --HV 4 --K 64,128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
