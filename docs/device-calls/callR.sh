#!/usr/bin/env bash
# Call R (run 29): wy_ut with one product per float32 operand (-DGDNBENCH_WY_UT_SPLIT=0, branch
# next/wy-ut-single-product) against main (1a04bd9 = d4a73e2's kernels): time, per-kernel ncu, accuracy.
set -u
R=$OUT/r; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf r.tgz r ); }
step timing
for b in main sp; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --dtypes bf16 --out $R/wy_$b.csv --no-progress > $R/wy_$b.log 2>&1; echo "wy $b rc=$?"; tail -5 $R/wy_$b.log | cut -c1-150
done
step ncu
for b in main sp; do
  timeout 40 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut -c 3 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_$b.csv --no-progress > $R/ncu_$b.log 2>&1; grep -E "  void|Duration|Compute \(SM\)" $R/ncu_$b.log | cut -c1-110
done
step accuracy
for b in main sp; do
  timeout 100 build-gpu/$b/gdnbench verify --suite gate --variants wy_ut --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$?"; tail -1 $R/gate_$b.log
done
grep -E ",FAIL," $R/gate_sp.csv | head -5 | cut -c1-400
step done
