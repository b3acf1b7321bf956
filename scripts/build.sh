#!/usr/bin/env bash
# Installs what is missing, configures and builds gdnbench into build/ (CUDA too when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
