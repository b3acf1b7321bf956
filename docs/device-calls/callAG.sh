#!/usr/bin/env bash
# Call AG (run 44): where the lane kernel's 2-block cap stops paying: lw (the one-wave rule as
# landed) against lmb2 (the 2-block cap everywhere), float32 pool, B = 4..24, alternated twice.
set -u
R=$OUT/ag; mkdir -p $R
for rep in 1 2; do for b in lw lmb2; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 4,8,12,16,20,24,32 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -8 $R/dec_${b}_$rep.log | head -7 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
( cd $OUT && tar czf ag.tgz ag )
