#!/usr/bin/env bash
# Fuzzes the command line and suite-file parser (tests/fuzz/) with libFuzzer: configures a CPU-only
# clang build with ASan and UBSan in build-fuzz/, builds the targets, runs each for a bounded time
# from its seed corpus. Exits non-zero when a target crashes (the reproducer is left in
# build-fuzz/artifacts/); rerun one with: build-fuzz/fuzz_cli_args build-fuzz/artifacts/crash-...
#   scripts/fuzz.sh [seconds per target, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
scripts/setup.sh >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGDNBENCH_FUZZ=ON -DGDNBENCH_ENABLE_CUDA=OFF >/dev/null
ninja -C build-fuzz fuzz_suite_file fuzz_cli_args
mkdir -p build-fuzz/artifacts
status=0
for target in suite_file cli_args; do
  corpus_seed=tests/fuzz/corpus_suite
  [ "$target" = cli_args ] && corpus_seed=tests/fuzz/corpus_cli
  work="build-fuzz/corpus_$target"  # grows across runs; the committed seeds stay as they are
  mkdir -p "$work"
  log="build-fuzz/fuzz_$target.log"
  echo "fuzz: $target for ${seconds}s (log $log)"
  if ! "build-fuzz/fuzz_$target" "$work" "$corpus_seed" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
       -artifact_prefix=build-fuzz/artifacts/ >"$log" 2>&1; then
    echo "fuzz: $target FAILED; tail of $log:"
    tail -n 40 "$log"
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^Done" "$log" | sed "s/^/fuzz: $target: /" || true
done
exit "$status"
