#!/usr/bin/env bash
# The main job: build, then `gdnbench run` on the default suite (the GPU variants if a GPU is
# present, else the CPU backend); prints the result table and writes reports/latest.csv.
# Extra arguments go to gdnbench run (e.g. --suite scaling, --dtypes bf16).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/gdnbench run --out reports/latest.csv "$@"
