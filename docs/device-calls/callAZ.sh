#!/usr/bin/env bash
# Call AZ (run 63): main's head (ba0c38c) as it lands: the whole gate and every [gpu] test.
set -u
R=$OUT/az; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf az.tgz az ); }
B=build-gpu/final
step gate
timeout 280 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
step tests
timeout 280 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step done
