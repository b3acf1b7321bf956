#!/usr/bin/env bash
# Call AV (run 59): fused_decode version 9 (v and the gates computed in the lane kernel, the front
# end on q and k only; docs/experiments/decode-v-in-lane.patch without its V_AFTER_WAIT knob: v9)
# against version 8 (the same source built with -DGDNBENCH_DECODE_V_IN_LANE=0: base): tests, the
# gate's decode lines, timing alternated over B, ncu of both at B = 64, the four sanitizers on the
# decode shapes.
set -u
R=$OUT/av; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf av.tgz av ); }
step tests and gate
timeout 120 build-gpu/v9/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 60 build-gpu/v9/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_v9.csv --no-progress > $R/gate_v9.log 2>&1; echo "gate v9 rc=$? $(tail -1 $R/gate_v9.log)"
step timing
for rep in 1 2; do for b in base v9; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
for b in base v9; do
  timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 2 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.2 --no-progress > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$?"; grep -E "gdn_decode|Duration|DRAM Throughput" $R/ncu_$b.log | head -8
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v9/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3,5 --H 2 --HV 4 --K 64,100,128 --V 36,72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
