#!/usr/bin/env bash
# prepare's Tm merge with two columns a thread: same bits as before (o/hT rel_l2 at fixed seeds),
# [gpu][wy_ut] tests, racecheck (wy_ut and fused_conv), timing against the tree before, ncu of prepare.
set -uo pipefail
R=$OUT/r; mkdir -p $R build && tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/gpu.txt 2>&1
for b in tri new; do
  bin=build/gdnbench; [ $b = tri ] && bin=build/gdnbench_tri
  for K in 64 128 256; do
    timeout 60 $bin verify --variants wy_ut,fused_conv --frontend off,on --dtypes bf16,fp16 --B 1,2 --H 2 --HV 4 --K $K --V $K \
      --T 1,65,200,1000 --h0 on --seed 7 --no-progress --out $R/bits_${b}_$K.csv > $R/bits_${b}_$K.log 2>&1; echo "bits $b K=$K rc=$?"
  done
done
t0=$(date +%s)
timeout 150 build/gdnbench_tests "[gpu][wy_ut]" > $R/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $R/tests.log
for K in 64 128 256; do
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 build/gdnbench verify --variants wy_ut,fused_conv --frontend off,on \
    --dtypes bf16 --B 1 --H 2 --K $K --V $K --T 300 --no-progress --out $R/race$K.csv > $R/race$K.log 2>&1; echo "racecheck K=$K rc=$?"
done
G="run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 1024,2048,4096,8192,16384,32768,65536"
for b in tri new tri new; do
  bin=build/gdnbench; [ $b = tri ] && bin=build/gdnbench_tri
  timeout 100 $bin $G --out $R/time_$b.csv > $R/time_$b.log 2>&1; echo "time $b rc=$?"
  cp $R/time_$b.csv $R/time_${b}_$(date +%s).csv
done
timeout 90 ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats -k regex:prepare --launch-count 1 \
  build/gdnbench run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 16384 \
  --warmup 0 --min-samples 1 --max-samples 1 --out $R/ncu_new.csv > $R/ncu_new.txt 2>&1; echo "ncu rc=$?"
grep -h "Duration\|Registers Per\|L1/TEX Cache\|Compute (SM)" $R/ncu_new.txt
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
