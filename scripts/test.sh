#!/usr/bin/env bash
# The tests: build (CUDA code compiles even where it cannot run), run the Catch2 suite ([gpu]
# tests skip without a GPU), the mutation check (the gate must fail every bug planted in the CPU
# kernels), the Python module's tests (pytest), the correctness gate on whatever backend this
# machine has, then the fuzzers of every reader of outside input (command line, suite files, .npy,
# dump manifests, CSVs, --resume, claims and tolerance files) for GDNBENCH_FUZZ_SECONDS each
# (default 20; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/gdnbench_tests
build/gdnbench_mutation_tests
# The Python module (build/python): a numpy GDN through gdnbench.verify, and planted mistakes.
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
build/gdnbench verify --suite gate --out build/gate.csv --no-progress | tail -n 1
# The compare gate on a real CSV: the gate against itself matches every case and finds no regression.
build/gdnbench compare build/gate.csv build/gate.csv --out build/gate_compare.md
# The Google Benchmark front end: a filter that matches nothing here is exit 4, not an empty success.
if [ -x build/gdnbench_bench ]; then
  rc=0; build/gdnbench_bench --benchmark_filter=no_such_variant >/dev/null 2>&1 || rc=$?
  [ "$rc" = 4 ] || { echo "test.sh: gdnbench_bench with nothing to run exited $rc, not 4" >&2; exit 1; }
fi
# The external runner's non-GPU path (dump, check, crash isolation) with numpy stand-ins.
/usr/bin/python3 scripts/ext_runner.py --gdnbench build/gdnbench --self-test
# Every analysis suite on the CPU backend at a reduced range, then the report, plots and claims.
scripts/cpu_suites.sh build/cpu_suites
# plot.py's batch-sweep plots, drawn from a committed H200 CSV of fused_decode over B.
rm -rf build/plots_batch
/usr/bin/python3 scripts/plot.py reports/results/h200/timing_runs35_44/run43_decode_lane_one_wave/dec_lw_1.csv \
  --outdir build/plots_batch --formats png
test -s build/plots_batch/step_latency_vs_B.png && test -s build/plots_batch/step_bandwidth_vs_B.png
scripts/fuzz.sh "${GDNBENCH_FUZZ_SECONDS:-20}"
