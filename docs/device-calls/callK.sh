#!/usr/bin/env bash
# Call K: initcheck and synccheck of the reduced gate on main's fused_decode (3481b43 binary).
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/k; mkdir -p $R
SANITIZE_TOOLS=initcheck SANITIZE_VARIANTS=fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=45 scripts/sanitize_gate.sh $R/init > /dev/null 2>&1 &
p1=$!
SANITIZE_TOOLS=synccheck SANITIZE_VARIANTS=fused_decode,fused_decode_bf16state SANITIZE_TIMEOUT=45 scripts/sanitize_gate.sh $R/sync > /dev/null 2>&1 &
p2=$!
wait $p1 $p2
cat $R/init/summary.txt $R/sync/summary.txt
