#!/usr/bin/env bash
# Call CM (run 102): version 14 with each block prefetching into L2 (cp.async.bulk.prefetch.L2) the
# state slice of the block d later in dispatch order (next/decode-quad-fe-l2-ahead,
# GDNBENCH_EXP_AHEAD=d; 396 blocks are resident at once): more of the state read in flight than the
# resident blocks' copies. Verify with d = 132; the step timed alternated: main, d = 0, 66, 132,
# 264, 396.
set -u
R=$OUT/cm; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cm.tgz cm ); }
GDNBENCH_EXP_AHEAD=132 timeout 100 build-gpu/pf/gdnbench verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify.csv --no-progress > $R/verify.log 2>&1; echo "verify rc=$? $(tail -n 1 $R/verify.log)"
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2; do for cfg in main 0 66 132 264 396; do
  if [ $cfg = main ]; then X=build-gpu/main/gdnbench; d=0; else X=build-gpu/pf/gdnbench; d=$cfg; fi
  GDNBENCH_EXP_AHEAD=$d timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 8,16,32,64,128,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${cfg}_$rep.csv --no-progress > $R/dec_${cfg}_$rep.log 2>&1; echo "dec $cfg $rep rc=$? $(grep '^fused' $R/dec_${cfg}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
