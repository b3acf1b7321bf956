#!/usr/bin/env bash
# Call AH (run 45): main's [gpu][frontend] tests (the stream kernel's T = 7, 2, 7 test), then
# docs/experiments/decode-column-tokens.patch (ct): tests, the gate's decode lines, timing
# alternated with main over B = 1..256, memcheck and racecheck of a small shape.
set -u
R=$OUT/ah; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ah.tgz ah ); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
step tests
for b in main ct; do
  timeout 150 build-gpu/$b/gdnbench_tests "[gpu][frontend]" > $R/tests_fe_$b.log 2>&1; echo "tests frontend $b rc=$?"; tail -2 $R/tests_fe_$b.log
  grep -B3 -A12 "FAILED" $R/tests_fe_$b.log | head -30
done
timeout 60 build-gpu/ct/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_ct.csv --no-progress > $R/gate_ct.log 2>&1; echo "gate ct rc=$? $(tail -1 $R/gate_ct.log)"
step timing
for rep in 1 2; do for b in main ct; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step sanitizers
pids=()
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --print-limit 20 build-gpu/ct/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 5,40 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
