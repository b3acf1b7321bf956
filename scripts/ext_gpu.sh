#!/usr/bin/env bash
# On the GPU machine: unpack the peers' packages carried in .peers/site.tar.xz (FLA's ops, FlashQLA
# and TileLang), or else install FLA from the wheels carried in .whl/, then time and verify the
# external implementations (scripts/ext_runner.py: FLA chunk and fused recurrent, FlashQLA, torch
# SDPA flash and cuDNN) on the scaling suite's shapes, judged by `gdnbench dump` / `gdnbench check`.
#
# Here (a machine with a package index), once, either the peers' pack (FlashQLA included)
#   <anchors>/pack_peers.sh .peers                 # carry [".peers", ...]
# or FLA alone:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl flash-linear-attention fla-core
# (fla-core holds fla.ops; flash-linear-attention adds the layers and models, which import
# transformers: the ops used here do not need it. Both are pure-Python wheels.)
# There, from the repository root, with the build and the wheels carried (carry [".whl", "build-gpu"]):
#   GDNBENCH_BUILD=build-gpu scripts/ext_gpu.sh OUTDIR [ext_runner.py options, e.g. --T 1024,8192]
# Writes OUTDIR/ext.csv (gdnbench CSV schema) and OUTDIR/ext_log.txt; exit status of the runner
# (0: every check passed, 1: a check failed or a variant crashed, 2: setup missing). Each variant
# runs in a child process of its own, so a CUDA fault costs one row (SKIPPED "crashed: ..."), not
# the run; --variant-timeout (default 300 s) bounds each child.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/ext_gpu.sh OUTDIR [ext_runner.py options]" >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
bin=${GDNBENCH_BUILD:-build}/gdnbench
[ -x "$bin" ] || { echo "ext_gpu: $bin is missing: build first, carry the build folder" >&2; exit 2; }
site=${EXT_SITE:-/tmp/site}
mkdir -p "$site"
if [ -f .peers/site.tar.xz ]; then
  tar -xJf .peers/site.tar.xz -C "$site" || { echo "ext_gpu: unpacking .peers/site.tar.xz failed" >&2; exit 2; }
elif ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
    || { echo "ext_gpu: pip install of .whl/*.whl failed" >&2; exit 2; }
else
  echo "ext_gpu: neither .peers/site.tar.xz nor wheels in .whl/ (see the header of this script)" >&2; exit 2
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import torch, triton, fla; print("torch", torch.__version__, "triton", triton.__version__, "fla", fla.__version__, "|", torch.cuda.get_device_name(0))' \
  || { echo "ext_gpu: torch, triton or fla does not import" >&2; exit 2; }
python3 -c 'import flash_qla; print("flash_qla", getattr(flash_qla, "__version__", "?"))' \
  || echo "ext_gpu: flash_qla does not import: its rows will be SKIPPED"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | sed 's/^/gpu: /'

python3 scripts/ext_runner.py --gdnbench "$bin" --out "$out/ext.csv" "$@" 2>&1 | tee "$out/ext_log.txt"
exit "${PIPESTATUS[0]}"
