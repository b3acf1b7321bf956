#!/usr/bin/env bash
# Fuzzes what gdnbench reads from outside (tests/fuzz/) with libFuzzer: the command line, suite
# files, .npy files, the dump manifest, gdnbench CSVs (report/claims), the CSV that --resume
# continues, claims files and tolerance files. Configures a CPU-only clang build with ASan and
# UBSan in build-fuzz/, builds the targets, runs each for a bounded time from its seed corpus
# (tests/fuzz/corpus_*), as many at once as there are cores (at most 2). Exits non-zero when a
# target crashes, hangs or allocates past the limit (the reproducer is left in
# build-fuzz/artifacts/); rerun one with: build-fuzz/fuzz_npy build-fuzz/artifacts/crash-...
#   scripts/fuzz.sh [seconds per target, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
scripts/setup.sh >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGDNBENCH_FUZZ=ON -DGDNBENCH_ENABLE_CUDA=OFF >/dev/null
# target, seed corpus, largest input (the CSV and claims seeds are a few KB)
targets=(
  "suite_file corpus_suite 4096"
  "cli_args corpus_cli 4096"
  "npy corpus_npy 4096"
  "dump_manifest corpus_manifest 4096"
  "csv corpus_csv 8192"
  "resume corpus_resume 8192"
  "claims corpus_claims 8192"
  "tolerances corpus_tolerances 4096"
)
names=()
for t in "${targets[@]}"; do names+=("fuzz_${t%% *}"); done
ninja -C build-fuzz "${names[@]}"
mkdir -p build-fuzz/artifacts
jobs_max=$(( $(nproc) < 2 ? 1 : 2 ))

run_target() {  # name seed max_len: exits non-zero when libFuzzer reports a finding
  local target=$1 corpus_seed=tests/fuzz/$2 max_len=$3
  local work="build-fuzz/corpus_$target"  # grows across runs; the committed seeds stay as they are
  mkdir -p "$work"
  "build-fuzz/fuzz_$target" "$work" "$corpus_seed" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix=build-fuzz/artifacts/ >"build-fuzz/fuzz_$target.log" 2>&1
}

declare -A pid_of
for t in "${targets[@]}"; do
  read -r target seed max_len <<<"$t"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  echo "fuzz: $target for ${seconds}s (log build-fuzz/fuzz_$target.log)"
  run_target "$target" "$seed" "$max_len" &
  pid_of[$target]=$!
done
status=0
for t in "${targets[@]}"; do
  target=${t%% *}
  log="build-fuzz/fuzz_$target.log"
  if ! wait "${pid_of[$target]}"; then
    echo "fuzz: $target FAILED; tail of $log:"
    tail -n 40 "$log"
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^Done" "$log" | sed "s/^/fuzz: $target: /" || true
done
exit "$status"
