#!/usr/bin/env bash
# One device call on main's binaries: the gate (first run of the tensor_core_split bounds on wy_ut's
# split plans) with its plan coverage; then wy_ut (auto and the wgmma chain) beside FLA 0.6.0
# (FLA_FLASH_QLA=0) and FlashQLA 0.1.3, timed by peers_bench.py (B 1 H 32 K V 128).
# Tarred after every step.
set -u
R=$OUT/r; mkdir -p "$R/gate" build
tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
pack() { tar -cJf "$OUT/r.tar.xz" -C "$OUT" r; }
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; pack; }
build/gdnbench list --plans > "$R/gate/plans.txt" 2>&1
step gate 200 build/gdnbench verify --suite gate --out "$R/gate/gate.csv" --no-progress > "$R/gate/gate.log" 2>&1
tail -1 "$R/gate/gate.log" >> "$R/summary.txt"; grep "^FAIL" "$R/gate/gate.log" | head -5 >> "$R/summary.txt"
python3 scripts/gate_plan_coverage.py "$R/gate/plans.txt" "$R/gate/gate.csv" > "$R/gate/coverage.txt" 2>&1; tail -1 "$R/gate/coverage.txt" >> "$R/summary.txt"
gzip -f "$R/gate/gate.csv"; pack
G="build/gdnbench run --no-ceilings --no-progress --dtypes bf16"
W="$G --variants wy_ut --plan auto,wgmma_chain"
site=/tmp/site; mkdir -p $site && tar -xJf .peers/site.tar.xz -C $site
E="env EXT_SITE=$site scripts/ext_gpu.sh"
step wy_ut 50 $W --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,32768,65536 --out "$R/wy_ut.csv" > "$R/wy_ut.log" 2>&1
step peers 180 env OUT=$R PEER_TS=1024,4096,16384,32768,65536 PYTHONPATH=$site FLA_FLASH_QLA=0 PYTHONUNBUFFERED=1 python3 .dev/peers_bench.py > "$R/peers.log" 2>&1
cat "$R/summary.txt"; grep "what=fwd" "$R/peers.log" | grep graph
