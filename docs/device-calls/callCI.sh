#!/usr/bin/env bash
# Call CI (run 98): main with the runs' uploads on their own stream, under run 93's conditions: the
# whole gate, every [gpu] test and a compute-sanitizer memcheck at once on one GPU; then the decode
# step at B = 64 once (unchanged kernels).
set -u
R=$OUT/ci; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ci.tgz ci ); }
B=build-gpu/main
step together
timeout 280 $B/gdnbench verify --suite gate --out $R/gate.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 280 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
timeout 250 compute-sanitizer --tool memcheck $B/gdnbench verify --variants fused_decode,recurrent --frontend on --T 1 --B 1,3,64 --H 4 --K 128 --V 128 --h0 on,off --dtypes bf16 --out $R/mc.csv --no-progress > $R/mc.log 2>&1 &
m=$!
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
wait $t; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
wait $m; echo "memcheck: $(grep SUMMARY $R/mc.log | tail -1) | PASS $(grep -c PASS $R/mc.csv)"
step timing
timeout 40 $B/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$? $(grep '^fused' $R/dec.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
step done
