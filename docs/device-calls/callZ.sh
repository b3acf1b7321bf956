#!/usr/bin/env bash
# Call Z (run 36): fused_decode version 8, second form (3 persistent 4-warp blocks per SM, 64 KiB
# of state stages each; stream = default rule, stream0 = the stream kernel wherever it can run)
# against main: tests, gate, timing alternated, ncu of both state kernels, sanitizers.
set -u
R=$OUT/z; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf z.tgz z ); }
step decode tests and gate
timeout 120 build-gpu/stream/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -40
timeout 60 build-gpu/stream0/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_stream0.csv --no-progress > $R/gate_stream0.log 2>&1; echo "gate stream0 rc=$?"; tail -1 $R/gate_stream0.log
step decode timing
for rep in 1 2; do for b in main stream0; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$?"; tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
done; done
step ncu
for b in stream0 main; do
timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis -k regex:"decode_(stream|lane)" -c 1 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --no-progress > $R/ncu_${b}_B64.log 2>&1; echo "ncu $b rc=$?"; grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Stall|L2 Hit|Mem Busy|Max Bandwidth" $R/ncu_${b}_B64.log | head -14
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --print-limit 20 build-gpu/stream0/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,3 --B 300 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
