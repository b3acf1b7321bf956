#!/usr/bin/env bash
# Call E: next/h200-pending (fused_conv v2 + fused_decode v3): correctness, sanitizers, timings, ncu.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/e; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf e.tgz e ); }
step tests
timeout 110 build-gpu/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -3 $R/tests.log
step gate
timeout 110 $B verify --suite gate --attention-ref auto --variants unfused_conv,fused_conv,fused_decode,fused_decode_bf16state,wy_ut --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -4 $R/gate.log
step memcheck
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 $B verify --variants fused_conv,unfused_conv --frontend on --T 8,65,200 --B 2 --H 2 --HV 4 --K 64,128 --V 64 --h0 on,off --dtypes bf16 --out $R/mc_fc.csv --no-progress > $R/mc_fc.log 2>&1; echo "mc fc rc=$? $(grep 'ERROR SUMMARY' $R/mc_fc.log)"; tail -2 $R/mc_fc.log
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 4 --K 64,128,256 --V 36,64,70 --h0 on --dtypes bf16,fp32 --out $R/mc_dec.csv --no-progress > $R/mc_dec.log 2>&1; echo "mc dec rc=$? $(grep 'ERROR SUMMARY' $R/mc_dec.log)"; tail -2 $R/mc_dec.log
step racecheck
timeout 60 compute-sanitizer --tool racecheck --print-limit 5 $B verify --variants fused_conv,unfused_conv --frontend on --T 8,65,200 --B 2 --H 2 --HV 4 --K 64,128 --V 64 --h0 on,off --dtypes bf16 --out $R/rc_fc.csv --no-progress > $R/rc_fc.log 2>&1; echo "rc fc rc=$? $(grep 'RACECHECK SUMMARY\|ERROR SUMMARY' $R/rc_fc.log)"; tail -2 $R/rc_fc.log
timeout 40 compute-sanitizer --tool racecheck --print-limit 5 $B verify --variants fused_decode,fused_decode_bf16state --frontend on --T 1,2,8 --B 3 --H 2 --HV 4 --K 64,128,256 --V 36,64,70 --h0 on --dtypes bf16,fp32 --out $R/rc_dec.csv --no-progress > $R/rc_dec.log 2>&1; echo "rc dec rc=$? $(grep 'RACECHECK SUMMARY\|ERROR SUMMARY' $R/rc_dec.log)"; tail -2 $R/rc_dec.log
step fe timing
timeout 80 $B run --no-ceilings --variants unfused_conv,fused_conv --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 4096,16384,65536 --out $R/fe.csv --no-progress > $R/fe.log 2>&1; echo "fe rc=$?"; tail -8 $R/fe.log
step decode timing
timeout 45 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -10 $R/dec.log
step ncu
timeout 50 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_" -c 4 $B run --no-ceilings --variants fused_conv --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 16384 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_run.csv --no-progress > $R/ncu.log 2>&1; echo "ncu rc=$?"; grep -E "gdn_|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu.log | head -20
timeout 40 ncu --clock-control none --section SpeedOfLight -k regex:"decode|frontend" -c 3 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "decode|frontend|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | head -14
step done
