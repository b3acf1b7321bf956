#!/usr/bin/env bash
# Call BQ (run 80): why quad's state kernel, 6% faster alone (run 79), does not shorten the step at
# B = 64. ncu of both kernels of the step without ncu's own cache flush (after the harness's L2
# memset, as in timing) for base and quad at B = 16, 64, 256; timing with and without --no-flush;
# more repetitions at B = 16, 32 and T = 2, 4, 8.
set -u
R=$OUT/bq; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bq.tgz bq ); }
step ncu
for b in base quad; do for B in 16 64 256; do
  timeout 40 ncu --clock-control none --cache-control none --section SpeedOfLight --launch-skip 4 -c 2 -k regex:"decode_" build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B $B --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 2 --no-progress --out $R/ncu_${b}_$B.csv > $R/ncu_${b}_$B.log 2>&1; echo "ncu $b B=$B rc=$? $(grep -E '^  [a-z_]+.*decode|Duration|DRAM Throughput' $R/ncu_${b}_$B.log | tr -s ' ' | cut -c1-60 | tr '\n' ';')"
done; done
step timing
for rep in 1 2; do for b in base quad; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --no-flush --out $R/nf_${b}_$rep.csv --no-progress > $R/nf_${b}_$rep.log 2>&1; echo "noflush $b $rep rc=$? $(grep '^fused' $R/nf_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 16,32 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "flush $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4,8 --h0 on --max-seconds 0.5 --out $R/dect_${b}_$rep.csv --no-progress > $R/dect_${b}_$rep.log 2>&1; echo "T $b $rep rc=$? $(grep '^fused' $R/dect_${b}_$rep.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done; done
step done
