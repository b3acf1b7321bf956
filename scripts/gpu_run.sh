#!/usr/bin/env bash
# Runs gdnbench on a GPU machine from a build made on another machine (docs/DESIGN.md section 5).
#
# Build where the packages are (static cudart, header-only fmt, static Boost.Program_options,
# so the binary needs only glibc, libstdc++, the CUDA driver and cuBLAS):
#   scripts/setup.sh && cmake -S . -B build -G Ninja && ninja -C build
# Copy the repository with build/ to the GPU machine (with the device tool: carry ["build"]),
# then from the repository root there:
#   scripts/gpu_run.sh OUTDIR "verify --suite gate" "run --suite default" ...
# Each quoted step is one gdnbench command line; its CSV goes to OUTDIR/stepN-<command>.csv and
# its output is appended to OUTDIR/log.txt (the tail of each step is also printed). A step may
# start with "sanitize:TOOL " to run it under compute-sanitizer --tool TOOL (memcheck, racecheck, initcheck, synccheck).
# Exit status: the first non-zero step status, after every step has run.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/gpu_run.sh OUTDIR STEP [STEP...]" >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
bin=${GDNBENCH_BUILD:-build}/gdnbench  # GDNBENCH_BUILD: another build folder (binaries only will do)
[ -x "$bin" ] || { echo "gpu_run: $bin is missing: build first (see the header of this script)" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
status=0
n=0
for step in "$@"; do
  n=$((n + 1))
  wrapper=()
  if [[ $step == sanitize:* ]]; then
    tool=${step%% *}; tool=${tool#sanitize:}; step=${step#* }
    wrapper=(compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20)
  fi
  read -r -a args <<<"$step"
  name="step$n-${args[0]}${wrapper:+-${tool}}"
  extra=()
  [[ " ${args[*]} " == *" --out "* ]] || extra=(--out "$out/$name.csv")
  echo "== $name: ${wrapper[*]} $bin ${args[*]} ${extra[*]}"
  start=$SECONDS
  "${wrapper[@]}" "$bin" "${args[@]}" "${extra[@]}" --no-progress >"$out/$name.tmplog" 2>&1
  rc=$?
  { echo "== $name"; cat "$out/$name.tmplog"; } >>"$out/log.txt"
  tail -n 25 "$out/$name.tmplog"
  rm -f "$out/$name.tmplog"
  echo "== $name: exit $rc after $((SECONDS - start)) s"
  [ $status -eq 0 ] && status=$rc
done
exit $status
