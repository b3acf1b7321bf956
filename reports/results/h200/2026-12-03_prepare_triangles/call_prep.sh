#!/usr/bin/env bash
# Prepare with A and Tm in one tile (4 blocks per SM at K = 128): tests, wy_ut/fused_conv gate lines,
# racecheck, base-vs-new timing in the same call, ncu of prepare at 16K.
set -uo pipefail
R=$OUT/r; mkdir -p $R build && tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/gpu.txt 2>&1
t0=$(date +%s)
timeout 150 build/gdnbench_tests "[gpu][wy_ut]" > $R/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $R/tests.log
t0=$(date +%s)
timeout 200 build/gdnbench verify --suite gate --variants wy_ut,fused_conv --out $R/gate.csv --no-progress > $R/gate.log 2>&1
echo "gate rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $R/gate.log
t0=$(date +%s)
for K in 64 128 256; do
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 build/gdnbench verify --variants wy_ut,fused_conv --dtypes bf16 \
    --B 1 --H 2 --K $K --V $K --T 300 --no-progress --out $R/race$K.csv > $R/race$K.log 2>&1; echo "racecheck K=$K rc=$?"
done; echo "race $(( $(date +%s) - t0 )) s"
G="run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 1024,2048,4096,8192,16384,32768,65536"
for b in base new base new; do
  bin=build/gdnbench; [ $b = base ] && bin=build/gdnbench_base
  timeout 100 $bin $G --out $R/time_$b.csv > $R/time_$b.log 2>&1; echo "time $b rc=$?"
  cp $R/time_$b.csv $R/time_${b}_$(date +%s).csv
done
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats -k regex:prepare --launch-count 1"
for b in base new; do
  bin=build/gdnbench; [ $b = base ] && bin=build/gdnbench_base
  timeout 90 $NCU $bin run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 16384 \
    --warmup 0 --min-samples 1 --max-samples 1 --out $R/ncu_$b.csv > $R/ncu_$b.txt 2>&1; echo "ncu $b rc=$?"
done
grep -h "Duration\|Registers Per\|Block Limit Shared\|Achieved Occupancy\|Theoretical Occ" $R/ncu_*.txt
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
