#!/usr/bin/env bash
# Call BH (run 71): fused_decode version 10 (v10: the vector front-end kernel, 8 channels per
# thread with 16-byte accesses, for K and V multiples of 8) against main (base): tests, the gate's
# decode and conv lines, timing alternated over B, T = 2, 4, GVA, K = 64, ncu of the front end,
# the four sanitizers on v10.
set -u
R=$OUT/bh; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bh.tgz bh ); }
step tests and gate
timeout 150 build-gpu/v10/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 120 build-gpu/v10/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state,unfused_conv,fused_conv --out $R/gate_v10.csv --no-progress > $R/gate_v10.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v10.log)"
step timing
for rep in 1 2; do for b in base v10; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base v10; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4,8 --h0 on --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T248 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1 --h0 on --out $R/gva_${b}.csv --no-progress > $R/gva_${b}.log 2>&1; echo "gva $b rc=$? $(grep '^fused' $R/gva_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 64 --V 64 --T 1 --h0 on --out $R/k64_${b}.csv --no-progress > $R/k64_${b}.log 2>&1; echo "k64 $b rc=$? $(grep '^fused' $R/k64_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes fp32,fp16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dt_${b}.csv --no-progress > $R/dt_${b}.log 2>&1; echo "fp32,fp16 $b rc=$? $(grep '^fused' $R/dt_${b}.log | awk '{print $2, $(NF-1)}' | tr '\n' ';')"
done
step ncu
for b in base v10; do
  timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --launch-skip 2 -c 2 -k regex:decode build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/ncu_$b.csv > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$?"
  grep -E "gdn_decode|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Instructions" $R/ncu_$b.log | sed 's/(GdnFrontEndParams.*//' | head -14
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v10/gdnbench verify --variants fused_decode --frontend on --T 1,3,8 --B 300 --H 2 --HV 4 --K 64,100,128 --V 36,72,128 --h0 on --dtypes bf16 --out $R/${tool}_many.csv --no-progress > $R/${tool}_many.log 2>&1 & pids+=($!)
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v10/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2 --B 3,515 --H 2 --HV 4 --K 32,128 --V 72,136 --h0 on --dtypes bf16,fp32,fp16 --out $R/${tool}_small.csv --no-progress > $R/${tool}_small.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do for w in many small; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -1) | $(tail -n 1 $R/${tool}_$w.log)"; done; done
step done
