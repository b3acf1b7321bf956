#!/usr/bin/env bash
# Call CC (run 92): knobs of version 14 (next/decode-quad-fe-knobs): ow, quad_fe in one-wave grids
# too (B = 1, 8 at H = 32); c1 / c16, the slice in 1 or 16 bulk copies (4 on main); against main
# 5b58d3f (v14). With this machine's copy rate (probe_flush) for the ratio.
set -u
R=$OUT/cc; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cc.tgz cc ); }
step probe and checks
build-gpu/probe_flush | tee $R/probe_flush.txt
timeout 60 build-gpu/ow/gdnbench verify --variants fused_decode --frontend on --T 1 --B 1,3,8 --H 32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_ow.csv --no-progress > $R/verify_ow.log 2>&1; echo "verify ow rc=$? $(tail -n 1 $R/verify_ow.log)"
for b in c1 c16; do timeout 60 build-gpu/$b/gdnbench verify --variants fused_decode --frontend on --T 1 --B 64,200 --H 4,32 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/verify_$b.csv --no-progress > $R/verify_$b.log 2>&1; echo "verify $b rc=$? $(tail -n 1 $R/verify_$b.log)"; done
step timing
for rep in 1 2; do for b in v14 ow c1 c16; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,2,4,8,16,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
