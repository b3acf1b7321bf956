#!/usr/bin/env bash
# Call AT (run 57): fused_conv version 3 (5e5e31f, branch next/fused-conv-v3): fc2 = version 4's
# output with the in-place front end, version 2's prepare with its prologue (the default); fc3 /
# fc4 = version 4's prepare with the in-place front end too, capped for 3 / 2 blocks per SM;
# main54 = main (fused_conv version 2). Tests in parallel, timing alone, sanitizers in parallel.
set -u
R=$OUT/at; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf at.tgz at ); }
row() { grep -E '^(fused_conv|unfused_conv) ' $1 | awk '{print $1 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
step tests
timeout 55 build-gpu/fc2/gdnbench_tests "fused_conv*" > $R/tests_fc2.log 2>&1 &
p1=$!
timeout 55 build-gpu/fc3/gdnbench_tests "fused_conv's o, hT*" > $R/tests_fc3.log 2>&1 &
p2=$!
timeout 55 build-gpu/fc4/gdnbench_tests "fused_conv's o, hT*" > $R/tests_fc4.log 2>&1 &
p3=$!
wait $p1; echo "fc2 tests rc=$? $(tail -2 $R/tests_fc2.log | head -1)"
wait $p2; echo "fc3 tests rc=$? $(tail -2 $R/tests_fc3.log | head -1)"
wait $p3; echo "fc4 tests rc=$? $(tail -2 $R/tests_fc4.log | head -1)"
grep -h -A12 "FAILED" $R/tests_fc*.log | head -30
step timing
for b in main54 fc2 fc3 fc4; do
  timeout 25 build-gpu/$b/gdnbench run --no-ceilings --variants unfused_conv,fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --out $R/t_${b}.csv --no-progress > $R/t_${b}.log 2>&1; echo "$b rc=$? $(row $R/t_${b}.log)"
done
step sanitizers
timeout 60 compute-sanitizer --tool memcheck --print-limit 20 build-gpu/fc2/gdnbench verify --variants fused_conv --frontend on --T 8,65,520 --B 2 --H 2 --HV 4 --K 64,128 --V 64 --h0 on --dtypes bf16 --out $R/memcheck.csv --no-progress > $R/memcheck.log 2>&1 &
q1=$!
timeout 60 compute-sanitizer --tool racecheck --print-limit 20 build-gpu/fc2/gdnbench verify --variants fused_conv --frontend on --T 8,65,520 --B 4 --H 4 --HV 24 --K 128 --V 64 --h0 on --dtypes bf16 --out $R/racecheck.csv --no-progress > $R/racecheck.log 2>&1 &
q2=$!
wait $q1 $q2
for tool in memcheck racecheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
