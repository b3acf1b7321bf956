#!/usr/bin/env bash
# Every analysis suite end to end on the CPU backend, with a reduced range: run (or verify), then
# the markdown report with its plots and the claim verdicts over all the CSVs. What a machine
# without a GPU can show of the suites; attention baselines and device memory are GPU-only, so
# their rows are SKIPPED and the claims that need them read NOT MEASURABLE HERE.
#   scripts/cpu_suites.sh [OUTDIR]      (default build/cpu_suites; binary: $GDNBENCH_BUILD/gdnbench)
# Exit status: non-zero when any step fails (a FAIL row, a report or plot that cannot be built).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/cpu_suites}
bin=${GDNBENCH_BUILD:-build}/gdnbench
[ -x "$bin" ] || { echo "cpu_suites: $bin is missing: run scripts/build.sh first" >&2; exit 2; }
mkdir -p "$out"
# Small heads keep the float64 references and the CPU kernels to seconds; the suites' own T and
# context axes stay, except where they would take minutes on two cores. One warm-up: the verifying
# launch before the timing warms too.
small=(--H 2 --K 32 --V 32 --threads 2 --no-progress --warmup 1 --min-samples 3 --max-seconds 0.2)
step() {
  local name=$1; shift
  echo "== $name: $bin $*"
  "$bin" "$@" "${small[@]}" --out "$out/$name.csv" | tail -n 1
}
step scaling run --suite suites/scaling.ini --T 256,512,1024,2048,4096,8192
step decode run --suite suites/decode.ini
step memory run --suite suites/memory.ini --T 256,512,1024,2048
step precision verify --suite suites/precision.ini --T 64,256,1024
step headdim run --suite suites/headdim.ini --T 512
step claims run --suite suites/claims.ini
# The training-step series (the suites' --pass fwdbwd lines) must give rows: linear_time_training reads them.
for f in "$out"/scaling.csv "$out"/claims.csv; do
  /usr/bin/python3 -c 'import csv, sys; sys.exit(not any(r["pass"] == "fwdbwd" and r["status"] == "PASS" for r in csv.DictReader(open(sys.argv[1]))))' "$f" \
    || { echo "cpu_suites: $f has no PASS row of --pass fwdbwd" >&2; exit 1; }
done
csvs=("$out"/scaling.csv "$out"/decode.csv "$out"/memory.csv "$out"/precision.csv "$out"/headdim.csv "$out"/claims.csv)
/usr/bin/python3 scripts/plot.py "${csvs[@]}" --outdir "$out/plots" --formats png | tail -n 1
"$bin" report "${csvs[@]}" --claims claims/gdn_claims.ini --plots "$out/plots" --out "$out/report.md" | tail -n 1
"$bin" claims "${csvs[@]}" >"$out/claims.txt"
grep -E '^\[' "$out/claims.txt"
ls "$out/plots"/*.png >/dev/null || { echo "cpu_suites: no plots were written" >&2; exit 1; }
echo "cpu_suites: report $out/report.md, plots $out/plots, claims $out/claims.txt"
