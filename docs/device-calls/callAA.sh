#!/usr/bin/env bash
# Call AA (run 38): fused_decode with the split-column state kernel (split = built with
# GDNBENCH_DECODE_STATE_KERNEL=2, every K <= 128 through it) against main and version 8's stream
# (stream0): tests, gate, timing alternated, ncu, sanitizers.
set -u
R=$OUT/aa; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf aa.tgz aa ); }
step tests and gate
timeout 120 build-gpu/split/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -40
timeout 60 build-gpu/split/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_split.csv --no-progress > $R/gate_split.log 2>&1; echo "gate split rc=$?"; tail -1 $R/gate_split.log
step timing
for rep in 1 2; do for b in main split stream0; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
done; done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy -k regex:"decode_split" -c 1 build-gpu/split/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --no-progress > $R/ncu_split_B64.log 2>&1; echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Occupancy|L2 Hit" $R/ncu_split_B64.log | head -8
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --print-limit 20 build-gpu/split/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 37 --H 2 --HV 4 --K 64,100,128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
