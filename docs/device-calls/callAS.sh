#!/usr/bin/env bash
# Call AS (run 56): the two-level scan after the clean-up (its kSeg kernels' prologue changed):
# the two-level tests, the gate's wy_ut and unfused_conv lines (model and G = 4), memcheck and
# racecheck of the G = 4 verify line, timing at HV = 4.
set -u
R=$OUT/as; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf as.tgz as ); }
row() { grep '^wy_ut' $1 | awk '{print "H" $5 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
step tests
timeout 60 build-gpu/auto/gdnbench_tests "wy_ut's two-level*" > $R/tests_two_level.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_two_level.log
step gate
timeout 60 build-gpu/auto/gdnbench verify --suite gate --variants wy_ut,unfused_conv --out $R/gate_auto.csv --no-progress > $R/gate_auto.log 2>&1; echo "gate auto rc=$? $(tail -1 $R/gate_auto.log)"
timeout 60 build-gpu/g4/gdnbench verify --suite gate --variants wy_ut,unfused_conv --out $R/gate_g4.csv --no-progress > $R/gate_g4.log 2>&1; echo "gate g4 rc=$? $(tail -1 $R/gate_g4.log)"
step sanitizers and timing
pids=()
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --print-limit 20 build-gpu/g4/gdnbench verify --variants wy_ut --T 65,300,700 --B 2 --H 1 --HV 2 --K 64,128,256 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
timeout 40 build-gpu/auto/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 4 --K 128 --V 128 --T 16384,65536 --dtypes bf16 --out $R/h4_auto.csv --no-progress > $R/h4_auto.log 2>&1; echo "auto rc=$? $(row $R/h4_auto.log)"
step done
