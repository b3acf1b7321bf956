#!/usr/bin/env bash
# Call BX (run 87): the quad kernel's rows before griddepcontrol.wait: main c45bbba (8, base)
# against builds of it with 0, 4 and 12. The gate's fused_decode lines, then timing alternated.
set -u
R=$OUT/bx; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bx.tgz bx ); }
step gate
for b in e0 e4 e12; do
  timeout 30 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -n 1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base e0 e4 e12; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.4 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
