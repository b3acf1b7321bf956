#!/usr/bin/env bash
# Call AO (run 52): wy_ut's two-level scan (d82c352, branch next/wy-ut-two-level). Builds: auto
# (the cost model picks the groups), g1 (the plain scan forced: main's path), g4 and g8 (groups
# forced, for the issue's shapes and the sanitizers). Tests, the gate (auto and g4), timing over
# H at B = 1 alternated auto / g1, forced groups at the issue's shape, ncu at H = 4, sanitizers.
set -u
R=$OUT/ao; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ao.tgz ao ); }
row() { grep '^wy_ut' $1 | awk '{print "H" $5 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
step tests
timeout 200 build-gpu/auto/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy.log 2>&1; echo "tests wy_ut rc=$?"; tail -2 $R/tests_wy.log
grep -B3 -A14 "FAILED" $R/tests_wy.log | head -40
step gate
timeout 150 build-gpu/auto/gdnbench verify --suite gate --variants wy_ut,fused_conv,unfused_conv --out $R/gate_auto.csv --no-progress > $R/gate_auto.log 2>&1; echo "gate auto rc=$? $(tail -1 $R/gate_auto.log)"
timeout 150 build-gpu/g4/gdnbench verify --suite gate --variants wy_ut,unfused_conv --out $R/gate_g4.csv --no-progress > $R/gate_g4.log 2>&1; echo "gate g4 rc=$? $(tail -1 $R/gate_g4.log)"
grep -E "FAIL|ERROR" $R/gate_auto.log $R/gate_g4.log | head -10
step timing over H
for rep in 1 2; do for b in g1 auto; do
  timeout 100 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 1,4,8,32 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --out $R/h_${b}_$rep.csv --no-progress > $R/h_${b}_$rep.log 2>&1; echo "$b $rep rc=$? $(row $R/h_${b}_$rep.log)"
done; done
step forced groups at the issue shape
for b in g4 g8; do
  timeout 60 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 4096,16384 --dtypes bf16 --out $R/issue_${b}.csv --no-progress > $R/issue_${b}.log 2>&1; echo "$b rc=$? $(row $R/issue_${b}.log)"
done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_wy_ut" build-gpu/auto/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 4 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_auto_H4_T16K.log 2>&1; echo "ncu auto rc=$?"
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_wy_ut" build-gpu/g1/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 4 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_g1_H4_T16K.log 2>&1; echo "ncu g1 rc=$?"
for f in auto g1; do echo "$f: $(grep -E '^  gdn_wy_ut|Duration' $R/ncu_${f}_H4_T16K.log | sed 's/(.*//' | awk '{print $1, $NF}' | head -12 | tr '\n' ' ')"; done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --print-limit 20 build-gpu/g4/gdnbench verify --variants wy_ut --T 65,300,700 --B 2 --H 1 --HV 2 --K 64,128,256 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
