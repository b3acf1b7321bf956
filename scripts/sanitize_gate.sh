#!/usr/bin/env bash
# compute-sanitizer over the correctness gate for every GPU variant, on the GPU machine:
#   scripts/sanitize_gate.sh OUTDIR
# (binary from a build made elsewhere: see scripts/gpu_run.sh; GDNBENCH_BUILD picks the folder).
#
# One `gdnbench verify` per tool with --variants auto, which on a GPU machine is every CUDA
# variant of the registry; verify launches each passing case twice (the determinism check), so
# the second launch on reused buffers is checked too. What each tool covers:
#   memcheck   out-of-bounds and misaligned global/shared accesses, bad frees, CUDA API errors:
#              the gate without its long-sequence lines (T > 1024), every dtype.
#   initcheck  reads of device memory never written (workspace a stage forgot, padding):
#              the same reduced gate.
#   synccheck  __syncthreads/__syncwarp misuse (divergent barriers, bad masks): the same.
#   racecheck  shared-memory races between threads of a block; the slowest tool (every shared
#              access is tracked), so T is cut to 1, 17 and 65 on every line (decode, a partial
#              chunk, two chunks with a tail at C = 16, 32, 64) and the dtypes to bf16 and fp32
#              (fp16 runs the same code as bf16 but for the conversions).
# The long lines (T = 4096 and 65536 at K = V = 128) only repeat the chunk loop of shapes the
# reduced gate has; run them unsanitized (`verify --suite gate`).
#
# Writes OUTDIR/<tool>.log (the sanitizer's report and gdnbench's output), OUTDIR/<tool>.csv and
# OUTDIR/summary.txt: one line per tool with the variants, the cases and verdicts, the
# sanitizer's error count, the kernels it named, the exit status and the seconds taken.
# Exit status: 0 when every tool reports no error and every case passes; 1 otherwise; 2 usage.
# With SANITIZE_VARIANTS named, a pass none of whose cases they take (the front-end racecheck
# for wy_ut) says "nothing to run" and does not fail; no pass with a case to run fails.
#
# Duration, measured on the H200 (docs/log/runs-001-033.md, runs 16-17): memcheck 9 s, synccheck 6 s,
# initcheck 6 s (every variant but attn_naive, whose initcheck reports fill minutes of log),
# racecheck far longer: the plain pass covered ~250 cases of recurrent, chunked and wy_ut in
# 280 s, the front-end pass ~120 cases in 70 s. SANITIZE_TIMEOUT (seconds per pass, default 130)
# bounds each pass; a pass that runs out of time counts as a failure. For a complete racecheck
# give it its own device call, split by SANITIZE_VARIANTS, with SANITIZE_TIMEOUT near 500.
# SANITIZE_TOOLS (default "memcheck initcheck synccheck racecheck") and SANITIZE_VARIANTS
# (default auto) narrow a rerun. SANITIZE_PER_VARIANT=1 splits every pass into one pass per variant
# (auto: every CUDA variant of `gdnbench list`, or every variant on a build without CUDA), each
# with its own SANITIZE_TIMEOUT and summary line `<pass>_<variant>`: a slow variant then cuts only
# its own pass, and the others finish.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/sanitize_gate.sh OUTDIR" >&2; exit 2; }
out=$1
mkdir -p "$out"
bin=${GDNBENCH_BUILD:-build}/gdnbench
[ -x "$bin" ] || { echo "sanitize_gate: $bin is missing: build first (scripts/gpu_run.sh says how)" >&2; exit 2; }
command -v compute-sanitizer >/dev/null ||
  { echo "sanitize_gate: compute-sanitizer is not on PATH (it ships with the CUDA toolkit)" >&2; exit 2; }
tools=${SANITIZE_TOOLS:-memcheck initcheck synccheck racecheck}
variants=${SANITIZE_VARIANTS:-auto}
limit=${SANITIZE_TIMEOUT:-130}
per_variant=${SANITIZE_PER_VARIANT:-0}
if [ "$per_variant" = 1 ]; then
  if [ "$variants" = auto ]; then
    mapfile -t variant_list < <("$bin" list | awk 'NR > 1 && $3 == "cuda" {print $1}')
    [ ${#variant_list[@]} -gt 0 ] || mapfile -t variant_list < <("$bin" list | awk 'NR > 1 {print $1}')
  else
    IFS=, read -r -a variant_list <<<"$variants"
  fi
else
  variant_list=("$variants")
fi

# The gate less its long-sequence lines (any T above 1024), written next to the results so the
# run can be repeated from OUTDIR alone.
reduced=$out/gate_reduced.ini
awk '{
  long = 0
  for (i = 1; i < NF; ++i)
    if ($i == "--T") { n = split($(i + 1), ts, ","); for (j = 1; j <= n; ++j) if (ts[j] + 0 > 1024) long = 1 }
  if (!long) print
}' suites/gate.ini >"$reduced"

: >"$out/summary.txt"
status=0
ran=0  # some pass had cases to run: a narrowed rerun whose every pass is empty checked nothing
# One pass per tool; racecheck takes two: with T overridden to 1, 17 and 65 every front-end line
# would include T = 1 without h0, where o is a single rounded product and a relative bound is
# ill-posed (docs/TOLERANCES.md), so the front-end lines run at T = 8, 17, 65 instead.
passes=()
for tool in $tools; do
  if [ "$tool" = racecheck ]; then
    passes+=("racecheck|--T 1,17,65 --dtypes bf16,fp32 --frontend off|racecheck")
    passes+=("racecheck|--T 8,17,65 --dtypes bf16,fp32 --frontend on|racecheck_frontend")
  else
    passes+=("$tool||$tool")
  fi
done
for pass in "${passes[@]}"; do
  for variant in "${variant_list[@]}"; do
    IFS='|' read -r tool extra_args name <<<"$pass"
    [ "$per_variant" = 1 ] && name="${name}_$variant"
    read -r -a extra <<<"$extra_args"
    start=$SECONDS
    timeout --signal=INT --kill-after=20 "$limit" \
      compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 100 \
      "$bin" verify --suite "$reduced" --variants "$variant" "${extra[@]}" --no-progress \
      --out "$out/$name.csv" >"$out/$name.log" 2>&1
    rc=$?
    secs=$((SECONDS - start))
    # "ERROR SUMMARY: N errors" (memcheck, initcheck, synccheck) or "RACECHECK SUMMARY: N hazards".
    errors=$(grep -Eo '(ERROR|RACECHECK) SUMMARY: [0-9]+' "$out/$name.log" | grep -Eo '[0-9]+$' | tail -n 1)
    [ -n "$errors" ] || errors="?"
    # Kernel names in the sanitizer's own lines (they start with =========); none when clean.
    kernels=$(grep '^=========' "$out/$name.log" | grep -Eo '[A-Za-z_][A-Za-z0-9_]*(_kernel|Kernel|gemm|_sm90)[A-Za-z0-9_]*' |
              sort -u | head -n 8 | tr '\n' ' ')
    verdicts=$(python3 - "$out/$name.csv" 2>/dev/null <<'PY'
import collections, csv, sys
counts = collections.defaultdict(collections.Counter)
for row in csv.DictReader(open(sys.argv[1])):
    counts[row["variant"]][row["status"]] += 1
print(" ".join(f"{v}:{sum(c.values())}(PASS {c['PASS']} FAIL {c['FAIL']} SKIPPED {c['SKIPPED']})"
               for v, c in sorted(counts.items())))
PY
    )
    verdict=clean
    if [ $rc -eq 124 ] || [ $rc -eq 130 ] || [ $rc -eq 137 ]; then verdict="timed out after ${limit} s"
    elif [ $rc -eq 99 ] || { [ "$errors" != "?" ] && [ "$errors" != 0 ]; }; then verdict="SANITIZER ERRORS"
    elif [ $rc -eq 4 ] && [ "$variants" != auto ]; then verdict="nothing to run (the named variants take none of its cases)"
    elif [ $rc -ne 0 ]; then verdict="gdnbench exit $rc (a case failed or it could not run)"
    elif [ "$errors" = "?" ]; then verdict="no sanitizer summary in the log"
    fi
    case $verdict in "nothing to run"*) ;; *) ran=1 ;; esac
    case $verdict in clean | "nothing to run"*) ;; *) status=1 ;; esac
    line="$name: $verdict; errors $errors; exit $rc; ${secs} s; variants ${verdicts:-none}; kernels named: ${kernels:-none}"
    echo "$line" | tee -a "$out/summary.txt"
  done
done
[ $ran = 1 ] || { echo "no pass had a case to run: nothing was sanitized" | tee -a "$out/summary.txt"; status=1; }
echo "summary: $out/summary.txt"
exit $status
