#!/usr/bin/env bash
# Call AQ (run 54): the two-level scan's cost model against forced group counts. Builds of main's
# kernels (fa1f5d2; wy_ut.cu's PTX as 0199583's): g1 (plain), g4, g8, g16, g32 and auto (the model).
set -u
R=$OUT/aq; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf aq.tgz aq ); }
row() { grep '^wy_ut' $1 | awk '{print "H" $5 "K" $7 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
for b in g1 g4 g8 g16 g32 auto; do
  step $b
  timeout 80 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 1,4,8,16 --K 128 --V 128 --T 16384,65536 --dtypes bf16 --out $R/k128_${b}.csv --no-progress > $R/k128_${b}.log 2>&1; echo "$b K128 rc=$? $(row $R/k128_${b}.log)"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 4,16 --K 64 --V 64 --T 65536 --dtypes bf16 --out $R/k64_${b}.csv --no-progress > $R/k64_${b}.log 2>&1; echo "$b K64 rc=$? $(row $R/k64_${b}.log)"
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 2,8 --K 256 --V 256 --T 65536 --dtypes bf16 --out $R/k256_${b}.csv --no-progress > $R/k256_${b}.log 2>&1; echo "$b K256 rc=$? $(row $R/k256_${b}.log)"
done
step done
