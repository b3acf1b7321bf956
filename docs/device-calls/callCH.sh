#!/usr/bin/env bash
# Call CH (run 97): main's head (binary of 7f13135's kernels; later commits are docs) alone on the
# GPU: every [gpu] test with nothing beside it; then run 93's failing case (recurrent) 10 times
# while a compute-sanitizer memcheck of the gate's decode lines runs on the same GPU.
set -u
R=$OUT/ch; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ch.tgz ch ); }
B=build-gpu/main
step tests alone
timeout 280 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1; echo "tests rc=$?"; tail -n 2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
step beside a sanitizer
timeout 200 compute-sanitizer --tool memcheck $B/gdnbench verify --suite gate --variants fused_decode,recurrent --out $R/mc.csv --no-progress > $R/mc.log 2>&1 &
m=$!
for i in $(seq 1 10); do timeout 60 $B/gdnbench_tests "recurrent matches the float64 reference on the GPU" > $R/t_$i.log 2>&1; echo "test $i rc=$? $(tail -n 2 $R/t_$i.log | head -n 1)"; done
kill $m 2>/dev/null; wait $m 2>/dev/null
step done
