#!/usr/bin/env bash
# Call AC (run 40): wy_ut's scan with wgmma for the state update (branch next/wy-ut-wgmma, built
# with -DGDNBENCH_WY_UT_WGMMA=1: wg) against main: tests, gate, timing alternated, ncu per kernel.
set -u
R=$OUT/ac; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ac.tgz ac ); }
step tests and gate
timeout 60 build-gpu/wg/gdnbench verify --variants wy_ut --T 1,65,300,1000 --H 2 --HV 2,4 --K 64,128 --V 64,96 --h0 on,off --dtypes bf16,fp16 --out $R/verify_small.csv --no-progress > $R/verify_small.log 2>&1; echo "verify small rc=$?"; tail -1 $R/verify_small.log; grep FAIL $R/verify_small.log | head -5
timeout 90 build-gpu/wg/gdnbench verify --suite gate --variants wy_ut,unfused_conv,fused_conv --out $R/gate_wg.csv --no-progress > $R/gate_wg.log 2>&1; echo "gate wg rc=$?"; tail -1 $R/gate_wg.log
step timing
for rep in 1 2; do for b in main wg; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -5 $R/wy_${b}_$rep.log | head -4 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:gdn_wy_ut_state -c 1 build-gpu/wg/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_wg_T16K.log 2>&1; echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_wg_T16K.log | head -4
step tests
timeout 100 build-gpu/wg/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log; grep -B3 -A10 FAILED $R/tests_wy.log | head -30
step done
