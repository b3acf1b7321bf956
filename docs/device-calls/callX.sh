#!/usr/bin/env bash
# Call X (run 35): wy_ut with Programmatic Dependent Launch between its kernels (branch
# next/wy-ut-pdl) against main: timing alternated, gate, tests; time-boxed to the device time left.
set -u
R=$OUT/x; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf x.tgz x ); }
step timing
for rep in 1 2; do for b in main pdl; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -4 $R/wy_${b}_$rep.log | head -3 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step gate
timeout 50 build-gpu/pdl/gdnbench verify --suite gate --variants wy_ut,unfused_conv,fused_conv --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate.log
step tests
timeout 60 build-gpu/pdl/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
step done
