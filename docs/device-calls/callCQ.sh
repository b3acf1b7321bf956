#!/usr/bin/env bash
# Call CQ (run 106): main's head as it ends this stop: [gpu][frontend] and the gate's decode lines
# together; then the decode step at B = 64 and 256 under each L2 flush, with the copy probe.
set -u
R=$OUT/cq; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cq.tgz cq ); }
B=build-gpu/h
timeout 100 $B/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 100 $B/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1 &
t=$!
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
wait $t; echo "tests rc=$? $(tail -n 2 $R/tests.log | head -n 1)"
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for mode in write clean; do
  timeout 30 $B/gdnbench run --no-ceilings --l2-flush $mode --variants fused_decode --frontend on --dtypes bf16 --B 64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_$mode.csv --no-progress > $R/dec_$mode.log 2>&1; echo "decode $mode rc=$? $(grep '^fused' $R/dec_$mode.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done
step done
