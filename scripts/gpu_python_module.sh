#!/usr/bin/env bash
# Builds gdnbench._core on a GPU machine for that machine's python3 (its torch), from the harness's
# archives built here: the module is the one C++ file python/gdnbench_core.cpp compiled against
# that python's headers and pybind11, linked with the same archives the CMake target links.
#   here:  scripts/gpu_python_module.sh --pack .dev/pymod.tar.xz        # after scripts/build.sh
#   there: scripts/gpu_python_module.sh .dev/pymod.tar.xz               # then PYTHONPATH=build/python
# Here's python may not be there's (Debian 12: 3.11; the GPU image: 3.12), and an extension
# module is built for one python ABI, so the CLI travels as a binary and the module as archives.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--pack" ]; then
  out=${2:?usage: scripts/gpu_python_module.sh --pack OUT.tar.xz}
  libs=(build/libgdn_harness_core.a build/libgdn_kernels_cpu.a build/libgdn_reference.a build/libgdn_plans.a)
  [ -f build/libgdn_kernels_cuda.a ] && libs+=(build/libgdn_kernels_cuda.a)
  cuda=$(dirname "$(dirname "$(command -v nvcc)")")
  boost=$(readlink -f /usr/lib/x86_64-linux-gnu/libboost_program_options.so)
  stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/lib" "$stage/generated"
  cp "${libs[@]}" "$stage/lib/"
  cp "$cuda/lib64/libcudart_static.a" "$boost" "$stage/lib/"
  cp build/generated/*.h "$stage/generated/"
  tar -cJf "$out" -C "$stage" .
  ls -la "$out"; exit 0
fi
py=${PYTHON:-python3}  # the python the module is for
pack=${1:?usage: scripts/gpu_python_module.sh PYMOD.tar.xz | --pack OUT.tar.xz}
dir=build/pymod; rm -rf "$dir"; mkdir -p "$dir" build/python/gdnbench
tar -xJf "$pack" -C "$dir"
suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
pyinc=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
pbinc=$($py -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null || echo /usr/include)  # pip's or Debian's
cuda_defs=(); [ -f "$dir/lib/libgdn_kernels_cuda.a" ] && cuda_defs=(-DGDNBENCH_HAVE_CUDA=1)
# The boost library beside the module, found through $ORIGIN: the image has no Boost.
cp "$dir"/lib/libboost_program_options.so.* build/python/gdnbench/
g++ -O2 -std=c++17 -fPIC -shared -fvisibility=hidden "${cuda_defs[@]}" -I. -I"$dir" \
  -I"$pyinc" -I"$pbinc" python/gdnbench_core.cpp \
  -Wl,--start-group "$dir"/lib/libgdn_*.a -Wl,--end-group "$dir"/lib/libcudart_static.a \
  build/python/gdnbench/libboost_program_options.so.* -Wl,-rpath,'$ORIGIN' \
  -L"$cuda/lib64" -lcublas -lpthread -ldl -lrt -o "build/python/gdnbench/_core$suffix"
cp python/gdnbench/__init__.py build/python/gdnbench/
# Suites, claims and tolerance profiles where the package looks first (as an installed one has them).
rm -rf build/python/gdnbench/data; mkdir -p build/python/gdnbench/data
cp -r suites claims tolerances build/python/gdnbench/data/
PYTHONPATH=build/python $py -c 'import gdnbench; print("gdnbench", gdnbench.__file__)'
