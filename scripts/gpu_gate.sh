#!/usr/bin/env bash
# The gate's whole check on a GPU machine, from binaries built elsewhere: plans, the gate, its plan
# coverage, the [gpu] tests; wall time of each; everything in OUTDIR.
#   tar -cJf .dev/bin.tar.xz -C build gdnbench gdnbench_tests     # here; carry [".dev"]
#   scripts/gpu_gate.sh OUTDIR [.dev/bin.tar.xz]                   # there
# Exit status: non-zero when the gate, the coverage or the tests fail.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/gpu_gate.sh OUTDIR [BINARIES.tar.xz]" >&2; exit 2; }
out=$1; mkdir -p "$out" build
[ $# -ge 2 ] && tar -xJf "$2" -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
timed() {  # NAME LIMIT_S COMMAND...: runs it, appends "NAME rc=.. wall_s=.." to summary.txt
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@"; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s rc=%d wall_s=%d.%03d\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000)) >> "$out/summary.txt"
  return $rc
}
status=0
build/gdnbench list --plans > "$out/plans.txt" 2>&1 || status=1
timed gate "${GATE_S:-480}" build/gdnbench verify --suite gate --out "$out/gate.csv" --no-progress \
  > "$out/gate.log" 2>&1 || status=1
tail -1 "$out/gate.log" >> "$out/summary.txt"
timed coverage 60 python3 scripts/gate_plan_coverage.py "$out/plans.txt" "$out/gate.csv" \
  > "$out/coverage.txt" 2>&1 || status=1
tail -1 "$out/coverage.txt" >> "$out/summary.txt"
timed gpu_tests "${TESTS_S:-300}" build/gdnbench_tests "[gpu]" > "$out/gpu_tests.log" 2>&1 || status=1
tail -2 "$out/gpu_tests.log" >> "$out/summary.txt"
cat "$out/summary.txt"
exit $status
