#!/usr/bin/env bash
# Call BT (run 83): a timeline of fused_decode's step. Builds of next/decode-trace with
# -DGDNBENCH_DECODE_TRACE=1: tl (main's kernels) and tq (with -DGDNBENCH_DECODE_QUAD_ALL=1: the quad
# kernel at every B). Each block of the vector front end and of the state kernel stamps
# %globaltimer at its start, after griddepcontrol.wait and at its end; the last timed launch's
# stamps are written to trace_*.csv. Float32 pool, B = 16, 64, 256.
set -u
R=$OUT/bt; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bt.tgz bt ); }
step trace
for rep in 1 2; do for b in tl tq; do for B in 16 64 256; do
  GDNBENCH_DECODE_TRACE_OUT=$R/trace_${b}_${B}_$rep.csv timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B $B --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --out $R/run_${b}_${B}_$rep.csv --no-progress > $R/run_${b}_${B}_$rep.log 2>&1; echo "$b B=$B $rep rc=$? rows $(wc -l < $R/trace_${b}_${B}_$rep.csv)"
done; done; done
step done
