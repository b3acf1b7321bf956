#!/usr/bin/env bash
# Call CL (run 101): version 14's kernel as a loop over heads (next/decode-quad-fe-loop): each
# block, 3 per SM, starts the next head's slice copy as soon as its lanes hold the current one.
# Run 100's loop spilled 156 bytes a lane under the 3-block cap; GDNBENCH_EXP_LOOP=2 runs the same
# loop built for 2 blocks per SM (218 registers, no spills), =1 the 3-block build, both with equal
# heads per block. Verify (sanitizers only if it wins); then the step's time:
# main (version 14), loop1, loop2.
set -u
R=$OUT/cl; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cl.tgz cl ); }
X=build-gpu/loop/gdnbench
for mode in 2 1; do
GDNBENCH_EXP_LOOP=$mode timeout 60 $X verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200,512 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_loop$mode.csv --no-progress > $R/verify_loop$mode.log 2>&1; echo "verify loop=$mode rc=$? $(tail -n 1 $R/verify_loop$mode.log)"
grep -E " FAIL " $R/verify_loop$mode.log | head -3
done
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2; do for cfg in main loop1 loop2; do
  case $cfg in main) X=build-gpu/main/gdnbench; m=0;; loop2) X=build-gpu/loop/gdnbench; m=2;; loop1) X=build-gpu/loop/gdnbench; m=1;; esac
  GDNBENCH_EXP_LOOP=$m timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,128,256,512 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${cfg}_$rep.csv --no-progress > $R/dec_${cfg}_$rep.log 2>&1; echo "dec $cfg $rep rc=$? $(grep '^fused' $R/dec_${cfg}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
GDNBENCH_EXP_LOOP=2 timeout 90 ncu --section SpeedOfLight --section LaunchStats --section Occupancy -k regex:quad_fe -c 1 build-gpu/loop/gdnbench run --no-ceilings --no-flush --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.1 --out $R/ncu.csv --no-progress > $R/ncu.txt 2>&1; echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Registers Per|Grid Size|Achieved Occ" $R/ncu.txt
step done
