#!/usr/bin/env bash
# Call BD (run 67): the two-level scan's cost model at B > 1 (runs 53-54 measured B = 1 only):
# wy_ut with the model's choice (main 1ab4c1c: model) against G forced to 1 (the plain scan), 4
# and 8 (-DGDNBENCH_WY_UT_SCAN_GROUPS=G, wy_ut.cu relinked into main's build), H = HV = 1, 2, 4 at
# B = 2 and 4, K = V = 128, bf16, T = 4K, 16K, 64K.
set -u
R=$OUT/bd; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bd.tgz bd ); }
step timing
for shape in "2 1" "2 2" "2 4" "4 1" "4 2" "4 4"; do
  set -- $shape
  for b in model g1 g4 g8; do
    timeout 60 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B $1 --H $2 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --max-seconds 0.5 --out $R/B$1_H$2_$b.csv --no-progress > $R/B$1_H$2_$b.log 2>&1; echo "B$1 H$2 $b rc=$? $(grep '^wy_ut' $R/B$1_H$2_$b.log | awk '{print $4 ":" $(NF-1)}' | tr '\n' ' ')"
  done; ( cd $OUT && tar czf bd.tgz bd )
done
step done
