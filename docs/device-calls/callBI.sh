#!/usr/bin/env bash
# Call BI (run 72): fused_decode version 10 as it would land (v10: the vector front end for bf16 and
# fp16 inputs, T <= 4, a grid of at least half the SMs; its T > 1 instance for 4 tokens) against
# main (base), and v10 built with -DGDNBENCH_DECODE_FE_KERNEL=2 (vf: the vector front end whatever
# its grid) at small B: tests, the gate's decode and conv lines, timing alternated, the four
# sanitizers on v10.
set -u
R=$OUT/bi; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bi.tgz bi ); }
step tests and gate
timeout 150 build-gpu/v10/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 120 build-gpu/v10/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state,unfused_conv,fused_conv --out $R/gate_v10.csv --no-progress > $R/gate_v10.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v10.log)"
step timing
for rep in 1 2; do for b in base v10; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for rep in 1 2; do for b in base v10 vf; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,2,4,8 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/small_${b}_$rep.csv --no-progress > $R/small_${b}_$rep.log 2>&1; echo "small $b $rep rc=$? $(grep '^fused' $R/small_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base v10; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,3,4,8 --h0 on --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T2348 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1 --h0 on --out $R/gva_${b}.csv --no-progress > $R/gva_${b}.log 2>&1; echo "gva $b rc=$? $(grep '^fused' $R/gva_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 64 --V 64 --T 1 --h0 on --out $R/k64_${b}.csv --no-progress > $R/k64_${b}.log 2>&1; echo "k64 $b rc=$? $(grep '^fused' $R/k64_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes fp32,fp16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dt_${b}.csv --no-progress > $R/dt_${b}.log 2>&1; echo "fp32,fp16 $b rc=$? $(grep '^fused' $R/dt_${b}.log | awk '{print $2, $(NF-1)}' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 280 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v10/gdnbench verify --variants fused_decode --frontend on --T 1,3,8 --B 300 --H 2 --HV 4 --K 64,100,128 --V 36,72,128 --h0 on --dtypes bf16 --out $R/${tool}_many.csv --no-progress > $R/${tool}_many.log 2>&1 & pids+=($!)
  timeout 280 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v10/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 96 --H 2 --HV 4 --K 32,128 --V 64,136 --h0 on --dtypes bf16,fp16 --out $R/${tool}_vec.csv --no-progress > $R/${tool}_vec.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do for w in many vec; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -1) | $(tail -n 1 $R/${tool}_$w.log) | cases $(grep -c PASS $R/${tool}_$w.csv)"; done; done
step done
