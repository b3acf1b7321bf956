#!/usr/bin/env bash
# Call BK (run 74): main's head (0df9c37, the decode tests' token-by-token launches in one
# method): the front-end tests; ncu of fused_decode's vector front end (full set, stall samples)
# at B = 64; ncu of unfused_conv's and fused_conv's kernels at T = 16384 (which kernel carries
# fused_conv's extra time).
set -u
R=$OUT/bk; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bk.tgz bk ); }
B=build-gpu/final
step tests
timeout 150 $B/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
step ncu decode front end
timeout 120 ncu --clock-control none --set full --launch-skip 2 -c 1 -k regex:decode_frontend -o $R/fe $B/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/x.csv > $R/ncu_fe_run.log 2>&1; echo "ncu fe rc=$?"
ncu --import $R/fe.ncu-rep --page details > $R/fe_details.txt 2>&1
ncu --import $R/fe.ncu-rep --page source --print-source sass --csv > $R/fe_source.csv 2>&1
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per SM|Warp Cycles Per Issued|Issued Ipc|Executed Instructions  " $R/fe_details.txt | head -12
rm -f $R/fe.ncu-rep
step ncu conv
for v in unfused_conv fused_conv; do
  timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats -k regex:"wy_ut|frontend" $B/gdnbench run --no-ceilings --variants $v --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 16384 --max-samples 1 --min-samples 1 --warmup 0 --no-progress --out $R/$v.csv > $R/ncu_$v.log 2>&1; echo "ncu $v rc=$?"
  grep -E "^  [a-z].*\(|Duration|DRAM Throughput|Registers Per|Achieved Occupancy" $R/ncu_$v.log | sed 's/(GdnParams.*//; s/(GdnFrontEndParams.*//; s/(const GdnParams.*//' | head -40
done
step done
