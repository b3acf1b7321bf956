#!/usr/bin/env bash
# Call BO (run 78): where the front end and the state kernel overlap. main 6316810 (base) against
# builds of next/decode-pdl-order: pdl0 (-DGDNBENCH_DECODE_PDL=0, no PDL), late
# (-DGDNBENCH_FE_TRIGGER=0: no early trigger, the state kernel launches as front-end blocks exit),
# e32 / e64 (-DGDNBENCH_LANE_EARLY_ROWS=32 / 64: the lane kernel issues only that many state rows
# before griddepcontrol.wait). Gate lines, then timing alternated.
set -u
R=$OUT/bo; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bo.tgz bo ); }
step gate
for b in pdl0 late e32 e64; do
  timeout 40 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -n 1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base pdl0 late e32 e64; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 8,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 9 $R/dec_${b}_$rep.log | head -n 8 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
