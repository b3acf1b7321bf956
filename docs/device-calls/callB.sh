#!/usr/bin/env bash
# Call B: the changed kernels once more, fused_conv's profile, then the suites and the external
# implementations in one run.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/b; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; }
step tests
timeout 60 build-gpu/gdnbench_tests "[gpu][wy_ut],fused_conv*" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -3 $R/tests.log
step gate wy_ut
timeout 40 $B verify --suite gate --attention-ref auto --variants wy_ut --out $R/gate_wy_ut.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step ncu fused_conv
timeout 45 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_wy_ut" -c 2 $B run --no-ceilings --variants fused_conv --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 16384 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_run.csv --no-progress > $R/ncu.log 2>&1; echo "ncu rc=$?"; grep -E "gdn_|Duration|DRAM Throughput|Compute \(SM\)|Registers|Achieved Occ" $R/ncu.log | head -12
step scaling
timeout 170 $B run --suite scaling --attention-ref sampled --max-seconds 1 --out $R/scaling.csv --no-progress > $R/scaling.log 2>&1; echo "scaling rc=$?"; tail -40 $R/scaling.log
step decode
timeout 50 $B run --suite decode --no-ceilings --max-seconds 1 --out $R/decode.csv --no-progress > $R/decode.log 2>&1; echo "decode rc=$?"; tail -50 $R/decode.log | grep -v SKIPPED
step ext
timeout 170 scripts/ext_gpu.sh $R/ext --T 1024,8192 --check-max-T 2048 --variant-timeout 90 > $R/ext.log 2>&1; echo "ext rc=$?"; tail -25 $R/ext.log
step done
cd $OUT && tar czf b.tgz b && rm -rf b
