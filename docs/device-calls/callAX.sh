#!/usr/bin/env bash
# Call AX (run 61): fused_decode's 4-row front-end kernel capped for 6 blocks of 256 threads per SM
# (40 registers: 12 blocks of 128 per SM, one wave of 1536 blocks at B = 64, H = HV = 32; fe6) and
# for 5 (48 registers, fe5), against no cap (64 registers, 8 blocks per SM: base = main):
# docs/experiments/decode-fe-rows-cap.patch, GDNBENCH_FE_ROWS_MIN_BLOCKS = 6, 5 and 1. Tests, the
# gate's decode lines, timing alternated over B, ncu of the front end, sanitizers of the 4-row path.
set -u
R=$OUT/ax; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ax.tgz ax ); }
step tests and gate
timeout 120 build-gpu/fe6/gdnbench_tests "[gpu][frontend]" > $R/tests_fe.log 2>&1; echo "tests frontend rc=$?"; tail -2 $R/tests_fe.log
grep -B3 -A12 "FAILED" $R/tests_fe.log | head -30
timeout 60 build-gpu/fe6/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_fe6.csv --no-progress > $R/gate_fe6.log 2>&1; echo "gate fe6 rc=$? $(tail -1 $R/gate_fe6.log)"
step timing
for rep in 1 2; do for b in base fe6 fe5; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -13 $R/dec_${b}_$rep.log | head -12 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
for b in base fe6; do
  timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy -k regex:"decode" -c 2 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.2 --no-progress > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$?"; grep -E "gdn_decode|Duration|DRAM Throughput|Achieved Occupancy" $R/ncu_$b.log | head -8
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 build-gpu/fe6/gdnbench verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1 --B 515 --H 4 --HV 8 --K 128 --V 128 --h0 on --dtypes bf16,fp32 --out $R/${tool}.csv --no-progress > $R/${tool}.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -1) | $(tail -n 1 $R/$tool.log)"; done
step done
