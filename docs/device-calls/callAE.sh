#!/usr/bin/env bash
# Call AE (run 42): fused_decode register cap of version 5's lane kernel at K = 128 (2 blocks per
# SM: lmb2; 4: lmb4) and 8 batch rows per front-end block at T = 1 (fe8), each built from main
# with a define (branch next/decode-knobs), timed against main alternated twice; the gate's
# decode lines for each.
set -u
R=$OUT/ae; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ae.tgz ae ); }
step gate
for b in lmb2 lmb4 fe8; do
  timeout 40 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in main lmb2 lmb4 fe8; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -7 $R/dec_${b}_$rep.log | head -6 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
