#!/usr/bin/env bash
# Call BE (run 68): fused_decode version 10 (the lane kernel waits for its batch rows' group of
# the front end through handoff words, not for the whole front-end grid; h4 = 4 rows per front-end
# block at T = 1 as on main, h8 = 8) against main (base): tests, the gate's decode lines, timing
# alternated over B, T = 2, 4 and GVA, the four sanitizers on h4.
set -u
R=$OUT/be; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf be.tgz be ); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
step tests and gate
timeout 150 build-gpu/h4/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 60 build-gpu/h4/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_h4.csv --no-progress > $R/gate_h4.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_h4.log)"
step timing
for rep in 1 2; do for b in base h4 h8; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base h4; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4 --h0 on --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T24 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1 --h0 on --out $R/gva_${b}.csv --no-progress > $R/gva_${b}.log 2>&1; echo "gva $b rc=$? $(grep '^fused' $R/gva_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 64 --V 64 --T 1 --h0 on --out $R/k64_${b}.csv --no-progress > $R/k64_${b}.log 2>&1; echo "k64 $b rc=$? $(grep '^fused' $R/k64_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/h4/gdnbench verify --variants fused_decode --frontend on --T 1,3,8 --B 300 --H 2 --HV 4 --K 64,100,128 --V 36,72,128 --h0 on --dtypes bf16 --out $R/${tool}_many.csv --no-progress > $R/${tool}_many.log 2>&1 & pids+=($!)
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/h4/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2 --B 3,515 --H 2 --HV 4 --K 128 --V 72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_small.csv --no-progress > $R/${tool}_small.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do for w in many small; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -1) | $(tail -n 1 $R/${tool}_$w.log)"; done; done
step done
