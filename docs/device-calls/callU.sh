#!/usr/bin/env bash
# Call U (run 32): fused_decode's front end with 4 batch rows per block at T = 1 (branch
# next/decode-fe-rows) against main: tests, gate, timing alternated, ncu of the front end, sanitizers.
set -u
R=$OUT/u; mkdir -p $R
F=build-gpu/fr/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf u.tgz u ); }
step tests and gate
timeout 90 build-gpu/fr/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A10 "FAILED" $R/tests_fe.log | head -30
timeout 60 $F verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step timing
for rep in 1 2; do for b in main fr; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -9 $R/dec_${b}_$rep.log | head -8 | awk '{print $1, $3, $(NF-1), $NF}'
done; done
step ncu
for b in main fr; do
  timeout 30 ncu --clock-control none --section SpeedOfLight -k regex:"decode_frontend" -c 1 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_$b.csv --no-progress > $R/ncu_$b.log 2>&1; grep -E "  void|Duration|DRAM Throughput" $R/ncu_$b.log | cut -c1-110
done
step sanitizers
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --print-limit 20 $F verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3,5 --H 2 --HV 2,4 --K 64,100,128 --V 36,64,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -1 $R/$tool.log)"; done
step done
