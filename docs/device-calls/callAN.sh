#!/usr/bin/env bash
# Call AN (run 51): wy_ut's scan with its stage tiles brought by bulk copies (cp.async.bulk, one
# per row, completing on an mbarrier per stage: bk) against main (b6e5d83, build-gpu/final):
# tests, the gate's wy_ut and front-end lines, timing alternated, ncu of the scan, sanitizers.
set -u
R=$OUT/an; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf an.tgz an ); }
step tests and gate
timeout 100 build-gpu/bk/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
grep -B3 -A14 "FAILED" $R/tests_wy.log | head -30
timeout 100 build-gpu/bk/gdnbench verify --suite gate --variants wy_ut,fused_conv,unfused_conv --out $R/gate_bk.csv --no-progress > $R/gate_bk.log 2>&1; echo "gate bk rc=$? $(tail -1 $R/gate_bk.log)"
step timing
for rep in 1 2; do for b in final bk; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(grep '^wy_ut' $R/wy_${b}_$rep.log | awk '{print $4 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step sanitizers and ncu
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --print-limit 20 build-gpu/bk/gdnbench verify --variants wy_ut --T 1,65,300 --B 1 --H 2 --HV 2 --K 64,128,256 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
timeout 40 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:"wy_ut.*state" -c 1 build-gpu/bk/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_bk_T16K.log 2>&1; echo "ncu rc=$?"; grep -E "Duration|Warp Cycles Per Issued" $R/ncu_bk_T16K.log | head -2
timeout 60 build-gpu/bk/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
step done
