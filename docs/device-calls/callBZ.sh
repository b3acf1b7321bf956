#!/usr/bin/env bash
# Call BZ (run 89): what the harness's L2 flush (a memset of twice the L2) costs the timed kernel
# after it. probe_flush (docs/device-calls/probe_flush.cu): copy and in-place update after a
# memset flush and after a memset + read flush. Then main's timing path with a clean flush
# (next/l2-clean-flush: GDNBENCH_EXP_FLUSH=clean adds a read of the flush buffer after the memset)
# against the memset alone and --no-flush: fused_decode over B, the ceilings, fused_conv at 4K.
set -u
R=$OUT/bz; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bz.tgz bz ); }
step probe
build-gpu/fl/probe_flush | tee $R/probe_flush.txt
step decode
for rep in 1 2; do for mode in write clean off; do
  extra=""; [ $mode = off ] && extra="--no-flush"
  GDNBENCH_EXP_FLUSH=$mode timeout 40 build-gpu/fl/gdnbench run --no-ceilings $extra --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${mode}_$rep.csv --no-progress > $R/dec_${mode}_$rep.log 2>&1; echo "dec $mode $rep rc=$? $(tail -n 13 $R/dec_${mode}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ceilings
for mode in write clean; do
  GDNBENCH_EXP_FLUSH=$mode timeout 60 build-gpu/fl/gdnbench ceilings --out $R/ceil_${mode}.csv > $R/ceil_${mode}.log 2>&1; echo "ceilings $mode rc=$?"; tail -n 5 $R/ceil_${mode}.log
done
step fused_conv
for mode in write clean; do
  GDNBENCH_EXP_FLUSH=$mode timeout 60 build-gpu/fl/gdnbench run --no-ceilings --variants unfused_conv,fused_conv,wy_ut --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 4096 --max-seconds 0.5 --out $R/fc_${mode}.csv --no-progress > $R/fc_${mode}.log 2>&1; echo "fc $mode rc=$? $(grep -E '^(unfused|fused|wy)' $R/fc_${mode}.log | awk '{print $1, $(NF-1)}' | tr '\n' ';')"
done
step done
