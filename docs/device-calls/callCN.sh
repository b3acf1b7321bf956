#!/usr/bin/env bash
# Call CN (run 103): run 102's L2 prefetch d blocks ahead in dispatch order, now skipped where the
# block d ahead is in the first wave (GDNBENCH_EXP_SKIPW=1: its copy starts with this one's):
# d = 66 without the skip (run 102's best) and d = 33, 50, 66, 99 with it, against main.
set -u
R=$OUT/cn; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cn.tgz cn ); }
GDNBENCH_EXP_AHEAD=66 GDNBENCH_EXP_SKIPW=1 timeout 100 build-gpu/pf/gdnbench verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify.csv --no-progress > $R/verify.log 2>&1; echo "verify rc=$? $(tail -n 1 $R/verify.log)"
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2; do for cfg in main 66n 33 50 66 99; do
  X=build-gpu/pf/gdnbench; sk=1; d=${cfg%n}
  [ $cfg = main ] && { X=build-gpu/main/gdnbench; d=0; }
  [ $cfg = 66n ] && sk=0
  GDNBENCH_EXP_AHEAD=$d GDNBENCH_EXP_SKIPW=$sk timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,128,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${cfg}_$rep.csv --no-progress > $R/dec_${cfg}_$rep.log 2>&1; echo "dec $cfg $rep rc=$? $(grep '^fused' $R/dec_${cfg}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
