#!/usr/bin/env bash
# One device call on main's binaries, the gate alone (the device time left allowed no more): the
# first GPU run of the tensor_core_split bounds on wy_ut's split plans, with the plan coverage.
set -u
R=$OUT/r; mkdir -p "$R/gate" build
tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
build/gdnbench list --plans > "$R/gate/plans.txt" 2>&1
t0=$(date +%s)
timeout 230 build/gdnbench verify --suite gate --out "$R/gate/gate.csv" --no-progress > "$R/gate/gate.log" 2>&1
echo "gate rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"
tail -1 "$R/gate/gate.log" >> "$R/summary.txt"; grep "^FAIL" "$R/gate/gate.log" | head -5 >> "$R/summary.txt"
python3 scripts/gate_plan_coverage.py "$R/gate/plans.txt" "$R/gate/gate.csv" > "$R/gate/coverage.txt" 2>&1
tail -1 "$R/gate/coverage.txt" >> "$R/summary.txt"
gzip -f "$R/gate/gate.csv"; tar -cJf "$OUT/r.tar.xz" -C "$OUT" r
cat "$R/summary.txt"
