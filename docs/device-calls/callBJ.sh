#!/usr/bin/env bash
# Call BJ (run 73): main's head with fused_decode version 10 (f93d17a's kernels) as it lands: the
# whole gate and every [gpu] test, side by side (correctness only, no timing).
set -u
R=$OUT/bj; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bj.tgz bj ); }
B=build-gpu/final
step gate and tests
timeout 300 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 300 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step done
