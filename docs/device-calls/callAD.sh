#!/usr/bin/env bash
# Call AD (run 41): the wgmma update with the U planes in the transposed (N-major) layout, 4-byte
# stores as on main (wg2), against main: verify, the gate's wy_ut lines, timing alternated, ncu.
set -u
R=$OUT/ad; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ad.tgz ad ); }
step verify and gate
timeout 60 build-gpu/wg2/gdnbench verify --variants wy_ut --T 1,65,300,1000 --H 2 --HV 2,4 --K 64,128 --V 64,96 --h0 on,off --dtypes bf16,fp16 --out $R/verify_small.csv --no-progress > $R/verify_small.log 2>&1; echo "verify small rc=$?"; tail -1 $R/verify_small.log
timeout 60 build-gpu/wg2/gdnbench verify --suite gate --variants wy_ut --out $R/gate_wg2.csv --no-progress > $R/gate_wg2.log 2>&1; echo "gate wg2 rc=$?"; tail -1 $R/gate_wg2.log
step timing
for rep in 1 2; do for b in main wg2; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,16384 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -3 $R/wy_${b}_$rep.log | head -2 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step ncu
timeout 50 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut_state -c 1 build-gpu/wg2/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_wg2_T16K.log 2>&1; echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_wg2_T16K.log | head -4
step done
