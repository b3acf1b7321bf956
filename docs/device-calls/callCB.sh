#!/usr/bin/env bash
# Call CB (run 91): fused_decode version 14 (quad_fe: the front end inside the quad kernel, one
# launch a step at T = 1, H = HV, K = V = 128) on main's working tree, against the same source
# built with -DGDNBENCH_DECODE_QUAD_FE=0 (version 13's two launches). Tests, the gate's decode
# lines, sanitizers on quad_fe shapes, timing alternated over B, ncu of the one-launch step.
set -u
R=$OUT/cb; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cb.tgz cb ); }
step tests, gate, sanitizers
timeout 200 build-gpu/v14/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1 &
t=$!
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v14/gdnbench verify --variants fused_decode --frontend on --T 1 --B 5,200 --H 4 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
timeout 90 build-gpu/v14/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$? $(tail -n 1 $R/gate.log)"
wait $t; echo "tests rc=$?"; tail -n 2 $R/tests.log | head -c 400
grep -B3 -A12 "FAILED" $R/tests.log | head -c 3000
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/${tool}.log | tail -n 1) | $(tail -n 1 $R/${tool}.log) | PASS $(grep -c PASS $R/${tool}.csv)"; done
step timing
for rep in 1 2; do for b in v13 v14; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,128,256,512 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in v13 v14; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --l2-flush clean --variants fused_decode --frontend on --dtypes bf16 --B 16,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/decc_${b}.csv --no-progress > $R/decc_${b}.log 2>&1; echo "clean $b rc=$? $(grep '^fused' $R/decc_${b}.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done
step ncu
timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats -k regex:decode -c 2 build-gpu/v14/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.05 --warmup 0 --min-samples 1 --max-samples 1 --no-progress --out $R/ncu_run.csv > $R/ncu_v14.txt 2>&1; echo "ncu rc=$?"
grep -E "gdn_decode|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput" $R/ncu_v14.txt | head -24
step done
