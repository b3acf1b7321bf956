#!/usr/bin/env bash
# Call W (run 34): main (df6f15f): wy_ut's three kernels by ncu at T = 1024 and 65536; the gate's
# decode lines on main's exact binary.
set -u
R=$OUT/w; mkdir -p $R
B=build-gpu/main/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf w.tgz w ); }
step ncu
for T in 1024 65536; do
  timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut -c 3 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T $T --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_$T.csv --no-progress > $R/ncu_$T.log 2>&1; echo "T=$T"; grep -E "  void|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_$T.log | cut -c1-100
done
step gate
timeout 60 $B verify --suite gate --variants fused_decode,fused_decode_bf16state,wy_ut --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
timeout 30 $B run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024 --dtypes bf16 --out $R/wy1k.csv --no-progress > $R/wy1k.log 2>&1; tail -2 $R/wy1k.log | head -1 | cut -c1-150
step done
