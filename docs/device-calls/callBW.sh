#!/usr/bin/env bash
# Call BW (run 86): main 29e4a6b (fused_decode version 13) as it lands: the whole gate and every [gpu] test.
# Correctness only, no timing: the two side by side.
set -u
R=$OUT/bw; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bw.tgz bw ); }
B=build-gpu/v13
step gate and tests
timeout 240 $B/gdnbench verify --suite gate --out $R/gate_main.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 240 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step done
