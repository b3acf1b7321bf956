#!/usr/bin/env bash
# Call A: correctness of the merged kernels, then their timings.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/a; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; }
step tests
timeout 150 build-gpu/gdnbench_tests "[gpu]" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -3 $R/tests.log
step gate
timeout 150 $B verify --suite gate --attention-ref auto --variants wy_ut,fused_conv,unfused_conv,fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$?"; tail -4 $R/gate.log
step wy_ut sweep
timeout 120 $B run --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 1024,2048,4096,8192,16384,32768,65536 --dtypes bf16 --out $R/wy_ut_sweep.csv --no-progress > $R/wy.log 2>&1; echo "wy rc=$?"; tail -12 $R/wy.log
step wy_ut shapes
timeout 90 $B run --no-ceilings --variants wy_ut --B 4 --H 64 --K 128 --V 128 --T 8192 --dtypes bf16 --out $R/wy_shapes1.csv --no-progress > $R/wy_s1.log 2>&1; tail -3 $R/wy_s1.log
timeout 60 $B run --no-ceilings --variants wy_ut --B 1 --H 16 --HV 32 --K 128 --V 128 --T 32768 --dtypes bf16 --out $R/wy_shapes2.csv --no-progress > $R/wy_s2.log 2>&1; tail -3 $R/wy_s2.log
step frontend
timeout 120 $B run --no-ceilings --variants unfused_conv,fused_conv --frontend on --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 4096,16384,65536 --out $R/fe.csv --no-progress > $R/fe.log 2>&1; echo "fe rc=$?"; tail -8 $R/fe.log
step decode
timeout 60 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state,recurrent --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -14 $R/dec.log
step ncu
timeout 90 ncu --clock-control none --section SpeedOfLight -k regex:"gdn_wy_ut|gdn_frontend" -c 4 $B run --no-ceilings --variants wy_ut,unfused_conv --frontend on,off --dtypes bf16 --B 1 --H 32 --K 128 --V 128 --T 16384 --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_run.csv --no-progress > $R/ncu.log 2>&1; echo "ncu rc=$?"; grep -E "gdn_|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu.log | head -30
timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 2 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "decode|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | head -12
step done
cd $OUT && tar czf a.tgz a && rm -rf a
