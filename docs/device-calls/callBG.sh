#!/usr/bin/env bash
# Call BG (run 70): where fused_decode's front-end kernel spends its ~12 us at B = 64 (main):
# ncu's full set and per-instruction warp stall samples (SASS) of the front-end kernel; the lane
# kernel's full set beside it.
set -u
R=$OUT/bg; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bg.tgz bg ); }
RUN="build-gpu/base/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress"
step ncu front end
timeout 240 ncu --clock-control none --set full --import-source yes --launch-skip 2 -c 1 -k regex:decode_frontend -o $R/fe $RUN --out $R/x.csv > $R/ncu_fe_run.log 2>&1; echo "ncu fe rc=$?"
ncu --import $R/fe.ncu-rep --page details > $R/fe_details.txt 2>&1
ncu --import $R/fe.ncu-rep --page source --print-source sass --csv > $R/fe_source.csv 2>&1
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per SM|Block Limit|Warp Cycles Per Issued|Issued Ipc|Memory Throughput|L2 Hit|Theoretical Occ" $R/fe_details.txt | head -30
step ncu lane
timeout 240 ncu --clock-control none --set full --launch-skip 2 -c 1 -k regex:decode_lane -o $R/lane $RUN --out $R/y.csv > $R/ncu_lane_run.log 2>&1; echo "ncu lane rc=$?"
ncu --import $R/lane.ncu-rep --page details > $R/lane_details.txt 2>&1
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per SM|Warp Cycles Per Issued|Memory Throughput|L2 Hit" $R/lane_details.txt | head -20
step done
