#!/usr/bin/env bash
# Call BC (run 66): fused_decode version 9 as it lands (2-warp lane blocks at T = 1 only, the
# "lane_narrow" kernel; v9) against main (base): tests (the state-kernel test requires
# lane_narrow and lane at T = 2), the gate's decode lines, timing over B at T = 1 and GVA at
# T = 1, 2, 4, memcheck and racecheck on lane_narrow and on lane at T = 2, 3.
set -u
R=$OUT/bc; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bc.tgz bc ); }
step tests and gate
timeout 100 build-gpu/v9/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -20
timeout 60 build-gpu/v9/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v9.csv --no-progress > $R/gate_v9.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_v9.log)"
step timing
for b in base v9 base v9; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}.csv --no-progress > $R/dec_${b}.log 2>&1; echo "dec $b rc=$? $(grep '^fused' $R/dec_${b}.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 16 --HV 32 --K 128 --V 128 --T 1,2,4 --h0 on --out $R/gva_${b}.csv --no-progress > $R/gva_${b}.log 2>&1; echo "gva $b rc=$? $(grep '^fused' $R/gva_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v9/gdnbench verify --variants fused_decode --frontend on --T 1,2,3 --B 300 --H 2 --HV 4 --K 100,128 --V 36,72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/${tool}.log | tail -1) | $(tail -n 1 $R/${tool}.log)"; done
step done
