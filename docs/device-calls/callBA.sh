#!/usr/bin/env bash
# Call BA (run 64): fused_decode's lane kernel (float32 pool) in blocks of 2 warps (w2, 6 blocks
# per SM) and of 1 warp (w1, 12 per SM) instead of 4 (3 per SM: base = main), the same warps per
# SM: tests, the gate's decode lines, timing alternated over B, ncu of the lane kernel at B = 64.
set -u
R=$OUT/ba; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ba.tgz ba ); }
step tests and gate
for b in w2 w1; do
  timeout 100 build-gpu/$b/gdnbench_tests "[gpu][frontend]" > $R/tests_fe_$b.log 2>&1; echo "tests $b rc=$?"; tail -2 $R/tests_fe_$b.log
  grep -B3 -A12 "FAILED" $R/tests_fe_$b.log | head -20
  timeout 60 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base w2 w1; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -7 $R/dec_${b}_$rep.log | head -6 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
for b in base w2 w1; do
  timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy -k regex:"lane" -c 1 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.2 --no-progress > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$?"; grep -E "Duration|DRAM Throughput|Achieved Occupancy" $R/ncu_$b.log | head -4 | tr -s ' ' | tr '\n' ';'; echo
done
step done
