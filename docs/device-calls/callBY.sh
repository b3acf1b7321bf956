#!/usr/bin/env bash
# Call BY (run 88): main 6e89c9b against two experiments on it: cf, the front end's conv caches
# stored before the tokens' math (next/decode-fe-cache-first-v13); pf, the front end's v-head
# threads prefetching the first GDNBENCH_EXP_PF_HEADS (b, hv) state slices into L2 with
# cp.async.bulk.prefetch.L2 (GDNBENCH_EXP_PF_LATE=1: after the token's math, else at the start)
# (next/decode-state-prefetch). Tests and the gate's decode lines on both, sanitizers on cf, then
# timing alternated.
set -u
R=$OUT/by; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf by.tgz by ); }
step tests, gate and sanitizers
timeout 150 build-gpu/cf/gdnbench_tests "[gpu][frontend]" > $R/tests_cf.log 2>&1 &
t1=$!
pids=()
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/cf/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,4 --B 5,200 --H 2 --HV 4 --K 128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}_cf.csv --no-progress > $R/${tool}_cf.log 2>&1 & pids+=($!)
done
timeout 60 build-gpu/cf/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_cf.csv --no-progress > $R/gate_cf.log 2>&1; echo "gate cf rc=$? $(tail -n 1 $R/gate_cf.log)"
GDNBENCH_EXP_PF_HEADS=100000 timeout 60 build-gpu/pf/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_pf.csv --no-progress > $R/gate_pf.log 2>&1; echo "gate pf rc=$? $(tail -n 1 $R/gate_pf.log)"
wait $t1; echo "tests cf rc=$?"; tail -n 2 $R/tests_cf.log | head -c 400
grep -B3 -A8 "FAILED" $R/tests_cf.log | head -c 2000
GDNBENCH_EXP_PF_HEADS=100000 timeout 150 build-gpu/pf/gdnbench_tests "[gpu][frontend]" > $R/tests_pf.log 2>&1; echo "tests pf rc=$?"; tail -n 2 $R/tests_pf.log | head -c 400
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool cf: $(grep SUMMARY $R/${tool}_cf.log | tail -n 1) | $(tail -n 1 $R/${tool}_cf.log) | cases $(grep -c PASS $R/${tool}_cf.csv)"; done
step timing cf
for rep in 1 2; do for b in main cf; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 13 $R/dec_${b}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step timing pf
for rep in 1 2; do
  for cfg in main:0:0 pf:0:0 pf:200:0 pf:400:0 pf:600:0 pf:200:1 pf:400:1 pf:600:1; do
    IFS=: read b heads late <<< "$cfg"
    GDNBENCH_EXP_PF_HEADS=$heads GDNBENCH_EXP_PF_LATE=$late timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/pf_${b}_${heads}_${late}_$rep.csv --no-progress > $R/pf_${b}_${heads}_${late}_$rep.log 2>&1; echo "pf $cfg $rep rc=$? $(grep '^fused' $R/pf_${b}_${heads}_${late}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  done
done
step done
