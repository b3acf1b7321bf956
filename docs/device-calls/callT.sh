#!/usr/bin/env bash
# Call T (run 31): fused_decode's state kernel with streaming cache hints (__ldcs / __stcs on the
# state; branch next/decode-streaming) against main: timing alternated, ncu, gate, memcheck.
set -u
R=$OUT/t; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf t.tgz t ); }
step timing
for rep in 1 2; do for b in main ds; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -9 $R/dec_${b}_$rep.log | head -8 | awk '{print $1, $3, $(NF-1), $NF}'
done; done
step ncu
for b in main ds; do
  timeout 30 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:"lane" -c 1 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_$b.csv --no-progress > $R/ncu_$b.log 2>&1; grep -E "  void|Duration|DRAM Throughput|Memory Throughput|L2 Hit" $R/ncu_$b.log | cut -c1-110
done
step gate
timeout 60 build-gpu/ds/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_ds.csv --no-progress > $R/gate_ds.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate_ds.log
timeout 60 compute-sanitizer --tool memcheck build-gpu/ds/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 2 --K 64,100,128 --V 36,64,70,128 --h0 on --dtypes bf16,fp32 --out $R/mc_ds.csv --no-progress > $R/mc_ds.log 2>&1; echo "memcheck: $(grep SUMMARY $R/mc_ds.log | tail -1) | $(tail -1 $R/mc_ds.log)"
step done
