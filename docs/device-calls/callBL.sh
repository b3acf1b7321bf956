#!/usr/bin/env bash
# Call BL (run 75): the vector decode front end with whole-sector stores (v11: each warp stages its
# rows' and caches' 16-byte pieces in shared memory, then stores them in lane order) against main
# (base): tests, the gate's decode lines, timing alternated, ncu of the front end, sanitizers.
set -u
R=$OUT/bl; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bl.tgz bl ); }
step tests and gate
timeout 100 build-gpu/v11/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 60 build-gpu/v11/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v11.csv --no-progress > $R/gate_v11.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v11.log)"
step timing
for rep in 1 2; do for b in base v11; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -11 $R/dec_${b}_$rep.log | head -10 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base v11; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4 --h0 on --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T24 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done
step ncu
for b in base v11; do
  timeout 60 ncu --clock-control none --section SpeedOfLight --launch-skip 2 -c 1 -k regex:decode_frontend build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/ncu_$b.csv > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$? $(grep -E 'Duration|DRAM Throughput' $R/ncu_$b.log | tr -s ' ' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 110 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v11/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 96 --H 1 --HV 2,3 --K 32,128 --V 64,136 --h0 on --dtypes bf16,fp16 --out $R/${tool}_vec.csv --no-progress > $R/${tool}_vec.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool vec: $(grep SUMMARY $R/${tool}_vec.log | tail -1) | $(tail -n 1 $R/${tool}_vec.log) | cases $(grep -c PASS $R/${tool}_vec.csv)"; done
step done
