#!/usr/bin/env bash
# Idempotent install of gdnbench's build and test dependencies (Debian 12).
# CUDA 13 (nvcc, cuBLAS) is expected to be installed already; without it only the CPU backend builds.
set -euo pipefail

# clang and libclang-rt-14-dev (libFuzzer, ASan, UBSan; Debian 12 ships clang 14): scripts/fuzz.sh.
# pybind11-dev, python3-dev, python3-numpy, python3-pytest: the Python module and its tests.
packages=(cmake ninja-build g++ catch2 libfmt-dev libboost-program-options-dev libbenchmark-dev
          python3-matplotlib clang libclang-rt-14-dev pybind11-dev python3-dev python3-numpy python3-pytest)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
