#!/usr/bin/env bash
# Call O (run 27): racecheck of the reduced gate for main's fused_decode variants (869f27f).
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/o; mkdir -p $R
for v in fused_decode fused_decode_bf16state; do
  SANITIZE_TOOLS=racecheck SANITIZE_VARIANTS=$v SANITIZE_TIMEOUT=75 scripts/sanitize_gate.sh $R/race_gate_$v > /dev/null 2>&1 &
done
wait
cat $R/race_gate_*/summary.txt
