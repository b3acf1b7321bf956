#!/usr/bin/env bash
# Call AL (run 49): against main (0a75b7e, build-gpu/v6): o6 = the output kernel's copy addresses
# computed once per thread; w6 = o6 + W stored by prepare as hi/lo planes (the scan's A operands).
# Tests, verify, gate, timing alternated, ncu of the three kernels at 16K, sanitizers (w6).
set -u
R=$OUT/al; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf al.tgz al ); }
step tests and gate
for b in o6 w6; do
  timeout 150 build-gpu/$b/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy_$b.log 2>&1; echo "tests wy_ut $b rc=$?"; tail -2 $R/tests_wy_$b.log
  grep -B3 -A14 "FAILED" $R/tests_wy_$b.log | head -40
  [ $b = w6 ] && timeout 150 build-gpu/$b/gdnbench verify --suite gate --variants wy_ut,fused_conv,unfused_conv --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -1 $R/gate_$b.log)"
done
timeout 60 build-gpu/w6/gdnbench verify --variants wy_ut --T 1,65,300,1000 --H 2 --HV 2,4 --K 64,128,256 --V 64,96 --h0 on,off --dtypes bf16,fp16 --out $R/verify_small.csv --no-progress > $R/verify_small.log 2>&1; echo "verify small rc=$? $(tail -1 $R/verify_small.log)"
timeout 150 build-gpu/w6/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend w6 rc=$?"; tail -2 $R/tests_fe.log
grep -h FAIL $R/gate_*.csv $R/verify_small.csv | head -5 | cut -c1-400
step timing
for rep in 1 2; do for b in v6 o6 w6; do
  timeout 60 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -5 $R/wy_${b}_$rep.log | head -4 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step ncu
for b in v6 o6 w6; do
timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:"gdn_wy_ut" -c 3 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_${b}_T16K.log 2>&1; echo "ncu $b rc=$?"; grep -E "gdn_wy_ut|Duration|Warp Cycles Per Issued" $R/ncu_${b}_T16K.log | sed -e 's/(GdnParams.*//' | head -9
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/w6/gdnbench verify --variants wy_ut --T 1,65,300 --B 1 --H 2 --HV 2,4 --K 64,128,256 --V 64,96 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
