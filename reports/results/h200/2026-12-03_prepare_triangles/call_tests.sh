#!/usr/bin/env bash
set -uo pipefail
R=$OUT/r; mkdir -p $R build && tar -xJf .dev/bin.tar.xz -C build
t0=$(date +%s)
timeout 400 build/gdnbench_tests "[gpu]" > $R/gpu_tests.log 2>&1; echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $R/gpu_tests.log
timeout 100 build/gdnbench verify --suite gate --variants wy_ut --out $R/gate_wy_ut.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
