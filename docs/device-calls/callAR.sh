#!/usr/bin/env bash
# Call AR (run 55): main after the two-level scan (its head's build): every [gpu] test and the
# whole gate.
set -u
R=$OUT/ar; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ar.tgz ar ); }
B=build-gpu/main54
step gate
timeout 260 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
step tests
timeout 280 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step done
