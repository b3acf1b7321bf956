#!/usr/bin/env bash
# Call AP (run 53): the two-level scan's combine with two cp.async stages and 8-column blocks
# (0199583). Two-level tests, the gate (auto, g4), timing over H at B = 1 alternated auto / g1,
# ncu at H = 4, sanitizers on g4.
set -u
R=$OUT/ap; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ap.tgz ap ); }
row() { grep '^wy_ut' $1 | awk '{print "H" $5 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
step tests
timeout 100 build-gpu/auto/gdnbench_tests "wy_ut's two-level*" > $R/tests_two_level.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests_two_level.log
grep -B3 -A14 "FAILED" $R/tests_two_level.log | head -40
step gate
timeout 150 build-gpu/auto/gdnbench verify --suite gate --variants wy_ut,unfused_conv --out $R/gate_auto.csv --no-progress > $R/gate_auto.log 2>&1; echo "gate auto rc=$? $(tail -1 $R/gate_auto.log)"
timeout 150 build-gpu/g4/gdnbench verify --suite gate --variants wy_ut,unfused_conv --out $R/gate_g4.csv --no-progress > $R/gate_g4.log 2>&1; echo "gate g4 rc=$? $(tail -1 $R/gate_g4.log)"
step timing over H
for b in g1 auto; do
  timeout 100 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 1,2,4,8,16 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --out $R/h_${b}.csv --no-progress > $R/h_${b}.log 2>&1; echo "$b rc=$? $(row $R/h_${b}.log)"
done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_wy_ut" -c 5 build-gpu/auto/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 4 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_auto_H4_T16K.log 2>&1; echo "ncu auto rc=$?"
grep -E '^  gdn_wy_ut|Duration' $R/ncu_auto_H4_T16K.log | sed 's/(.*//' | awk '{print $1, $NF}' | tr '\n' ' '; echo
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --print-limit 20 build-gpu/g4/gdnbench verify --variants wy_ut --T 65,300,700 --B 2 --H 1 --HV 2 --K 64,128,256 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
