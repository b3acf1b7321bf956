#!/usr/bin/env bash
# Call Y (runs 35-36): fused_decode version 8 (branch next/decode-stream; stream = default rule,
# stream0 = built with GDNBENCH_DECODE_STREAM_MIN_UNITS_PER_SM=0, the stream kernel wherever it can
# run) against main: tests, gate, sanitizers, timing alternated, ncu; then wy_ut with PDL
# (next/wy-ut-pdl) against main: timing alternated, gate, tests.
set -u
R=$OUT/y; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf y.tgz y ); }
step decode tests and gate
timeout 120 build-gpu/stream/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -40
timeout 60 build-gpu/stream0/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_stream0.csv --no-progress > $R/gate_stream0.log 2>&1; echo "gate stream0 rc=$?"; tail -1 $R/gate_stream0.log
grep -c FAIL $R/gate_stream0.csv
step decode timing
for rep in 1 2; do for b in main stream0; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
done; done
step ncu
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:decode -c 4 build-gpu/stream0/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --no-progress > $R/ncu_stream0_B64.log 2>&1; echo "ncu rc=$?"; grep -E "gdn_decode|Duration|DRAM Throughput|Memory Throughput" $R/ncu_stream0_B64.log | head -24
step sanitizers
pids=()
for tool in memcheck racecheck initcheck synccheck; do
  timeout 110 compute-sanitizer --tool $tool --print-limit 20 build-gpu/stream0/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 300 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -1 $R/$tool.log)"; done
step wy_ut pdl timing
for rep in 1 2; do for b in main pdl; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384 --dtypes bf16 --out $R/wy_${b}_$rep.csv --no-progress > $R/wy_${b}_$rep.log 2>&1; echo "wy $b $rep rc=$? $(tail -4 $R/wy_${b}_$rep.log | head -3 | awk '{print $3 ":" $(NF-1)}' | tr '\n' ' ')"
done; done
step pdl gate
timeout 50 build-gpu/pdl/gdnbench verify --suite gate --variants wy_ut,unfused_conv,fused_conv --out $R/gate_pdl.csv --no-progress > $R/gate_pdl.log 2>&1; echo "gate pdl rc=$?"; tail -1 $R/gate_pdl.log
timeout 60 build-gpu/pdl/gdnbench_tests "[gpu][wy_ut]" > $R/tests_wy_pdl.log 2>&1; echo "tests wy_ut pdl rc=$?"; tail -2 $R/tests_wy_pdl.log
step done
