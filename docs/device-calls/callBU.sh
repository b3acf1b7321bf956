#!/usr/bin/env bash
# Call BU (run 84): the quad kernel at every B (run 83's trace: its early loads lengthen the front
# end by 3-4 us) with fewer state rows before griddepcontrol.wait or the front end's trigger at
# its exit. main 958925b (base) against next/decode-trace builds with -DGDNBENCH_DECODE_QUAD_ALL=1:
# qa (as version 12's quad), qa16 / qa8 (-DGDNBENCH_QUAD_EARLY_ROWS=16 / 8 of a lane's 32 rows
# before the wait), qalate (-DGDNBENCH_QUAD_TRIGGER_AT_EXIT=1). Gate lines, then timing alternated.
set -u
R=$OUT/bu; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bu.tgz bu ); }
step gate
for b in qa16 qa8 qalate; do
  timeout 40 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -n 1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base qa qa16 qa8 qalate; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
