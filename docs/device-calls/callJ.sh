#!/usr/bin/env bash
# Call J: the external implementations at T = 16384 (FLA fused_recurrent, SDPA flash and cuDNN).
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/j; mkdir -p $R
timeout 150 scripts/ext_gpu.sh $R/ext --T 16384 --check-max-T 2048 --variants ext:fla_fused_recurrent,ext:sdpa_flash,ext:sdpa_cudnn --variant-timeout 60 > $R/ext.log 2>&1; echo "ext rc=$?"; tail -12 $R/ext.log
