#!/usr/bin/env bash
# Call CK (run 100): version 14's kernel as a loop over heads (next/decode-quad-fe-loop): each
# block, 3 per SM, starts the next head's slice copy as soon as its lanes hold the current one.
# GDNBENCH_EXP_LOOP=1 gives every block the same number of heads (ceil(heads / (3 SMs))); unset, one
# head a block (version 14's grid on the loop's code). Verify, [gpu][frontend] tests and sanitizers
# with it; then the step's time: main (version 14), loop code one head a block, loop.
set -u
R=$OUT/ck; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ck.tgz ck ); }
X=build-gpu/loop/gdnbench
for mode in 1 0; do
GDNBENCH_EXP_LOOP=$mode timeout 60 $X verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200,512 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_loop$mode.csv --no-progress > $R/verify_loop$mode.log 2>&1; echo "verify loop=$mode rc=$? $(tail -n 1 $R/verify_loop$mode.log)"
grep -E " FAIL " $R/verify_loop$mode.log | head -3
done
pids=()
for tool in memcheck racecheck synccheck; do
  GDNBENCH_EXP_LOOP=1 timeout 200 compute-sanitizer --tool $tool --print-limit 10 $X verify --variants fused_decode --frontend on --T 1 --B 3,200 --H 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/$tool.csv --no-progress > $R/$tool.log 2>&1 & pids+=($!)
done
GDNBENCH_EXP_LOOP=1 timeout 250 build-gpu/loop/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -n 1) | PASS $(grep -c PASS $R/$tool.csv)"; done
echo "tests: $(tail -n 3 $R/tests.log | tr '\n' ' ')"
grep -B2 -A8 FAILED $R/tests.log | head -30
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2 3; do for cfg in main loop0 loop1; do
  case $cfg in main) X=build-gpu/main/gdnbench; m=0;; loop0) X=build-gpu/loop/gdnbench; m=0;; loop1) X=build-gpu/loop/gdnbench; m=1;; esac
  GDNBENCH_EXP_LOOP=$m timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,128,256,512 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${cfg}_$rep.csv --no-progress > $R/dec_${cfg}_$rep.log 2>&1; echo "dec $cfg $rep rc=$? $(grep '^fused' $R/dec_${cfg}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
GDNBENCH_EXP_LOOP=1 timeout 90 ncu --section SpeedOfLight --section LaunchStats --section Occupancy -k regex:quad_fe -c 1 build-gpu/loop/gdnbench run --no-ceilings --no-flush --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.1 --out $R/ncu.csv --no-progress > $R/ncu.txt 2>&1; echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Registers Per|Grid Size|Achieved Occ" $R/ncu.txt
step done
