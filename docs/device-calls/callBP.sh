#!/usr/bin/env bash
# Call BP (run 79): main 6316810 (base) against next/decode-pdl-order: trig (the front end
# triggers the state kernel at its exit where the stream kernel follows, early elsewhere) and quad
# (trig built with -DGDNBENCH_DECODE_QUAD=1: the float32 pool's state update with 16-byte
# accesses, 4 columns x 32 rows per lane). Tests, the gate's decode lines, timing alternated, ncu
# of the state kernels, sanitizers on quad.
set -u
R=$OUT/bp; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bp.tgz bp ); }
step tests and gate
for b in trig quad; do
  timeout 60 build-gpu/$b/gdnbench_tests "[gpu][frontend]" > $R/tests_fe_$b.log 2>&1; echo "tests $b rc=$?"; tail -n 2 $R/tests_fe_$b.log
  grep -B3 -A12 "FAILED" $R/tests_fe_$b.log | head -40
  timeout 40 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -n 1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base trig quad; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 13 $R/dec_${b}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base quad; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4 --h0 on --max-seconds 0.5 --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T24 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done
step ncu
for b in base quad; do
  timeout 40 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --launch-skip 2 -c 1 -k regex:"decode_(lane|quad)" build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/ncu_${b}.csv > $R/ncu_${b}.log 2>&1; echo "ncu $b rc=$? $(grep -E 'Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per' $R/ncu_${b}.log | tr -s ' ' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --print-limit 20 build-gpu/quad/gdnbench verify --variants fused_decode --frontend on --T 1,3 --B 5,300 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_q.csv --no-progress > $R/${tool}_q.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool q: $(grep SUMMARY $R/${tool}_q.log | tail -n 1) | $(tail -n 1 $R/${tool}_q.log) | cases $(grep -c PASS $R/${tool}_q.csv)"; done
step done
