#!/usr/bin/env bash
# Call CJ (run 99): version 14 made persistent (docs/experiments/decode-quad-fe-persistent.patch,
# GDNBENCH_EXP_PERSIST=1) against the same binary without it: verify, the [gpu][frontend] tests and
# the sanitizers with it, then the step's time alternated over B, the copy probe, and ncu at B = 64.
set -u
R=$OUT/cj; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cj.tgz cj ); }
X=build-gpu/persist/gdnbench
GDNBENCH_EXP_PERSIST=1 timeout 60 $X verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_persist.csv --no-progress > $R/verify_persist.log 2>&1; echo "verify persist rc=$? $(tail -n 1 $R/verify_persist.log)"
grep -E " FAIL " $R/verify_persist.log | head -3
pids=()
for tool in memcheck racecheck synccheck; do
  GDNBENCH_EXP_PERSIST=1 timeout 200 compute-sanitizer --tool $tool --print-limit 10 $X verify --variants fused_decode --frontend on --T 1 --B 3,200 --H 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/$tool.csv --no-progress > $R/$tool.log 2>&1 & pids+=($!)
done
GDNBENCH_EXP_PERSIST=1 timeout 250 build-gpu/persist/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -n 1) | PASS $(grep -c PASS $R/$tool.csv)"; done
echo "tests: $(tail -n 3 $R/tests.log | tr '\n' ' ')"
grep -B2 -A8 FAILED $R/tests.log | head -30
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2 3; do for mode in 0 1; do
  GDNBENCH_EXP_PERSIST=$mode timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${mode}_$rep.csv --no-progress > $R/dec_${mode}_$rep.log 2>&1; echo "dec persist=$mode $rep rc=$? $(grep '^fused' $R/dec_${mode}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
for mode in 0 1; do
  GDNBENCH_EXP_PERSIST=$mode timeout 90 ncu --section SpeedOfLight --section LaunchStats --section Occupancy -k regex:quad_fe -c 1 $X run --no-ceilings --no-flush --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.1 --out $R/ncu_$mode.csv --no-progress > $R/ncu_$mode.txt 2>&1; echo "ncu $mode rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Grid Size" $R/ncu_$mode.txt
done
step done
