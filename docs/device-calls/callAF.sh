#!/usr/bin/env bash
# Call AF (run 43): fused_decode with version 5's lane kernel capped for 2 blocks per SM where its
# grid fits one wave of those (branch next/decode-lane-wave: lw) against main: tests, gate,
# timing alternated over B = 1..256, sanitizers of the one-wave shape.
set -u
R=$OUT/af; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf af.tgz af ); }
step tests and gate
timeout 100 build-gpu/lw/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 40 build-gpu/lw/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_lw.csv --no-progress > $R/gate_lw.log 2>&1; echo "gate lw rc=$? $(tail -1 $R/gate_lw.log)"
step timing
for rep in 1 2; do for b in main lw; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --print-limit 20 build-gpu/lw/gdnbench verify --variants fused_decode --frontend on --T 1,3 --B 5 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
