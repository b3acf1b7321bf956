#!/usr/bin/env bash
# Call CO (run 104): fused_decode version 15 as it lands (quad_fe's blocks prefetch into L2 the slice
# of the block 50 later in dispatch order, past the first wave). Together on one GPU: the whole
# gate, every [gpu] test, memcheck, racecheck and synccheck of quad_fe past one wave; then the
# figures (both pools, B = 1..256) alternated with version 14's binary (main dee0a99), and the copy
# probe.
set -u
R=$OUT/co; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf co.tgz co ); }
B=build-gpu/v15
step together
timeout 300 $B/gdnbench verify --suite gate --out $R/gate.csv --no-progress > $R/gate.log 2>&1 &
g=$!
timeout 300 $B/gdnbench_tests "[gpu]" > $R/tests_gpu.log 2>&1 &
t=$!
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 280 compute-sanitizer --tool $tool --print-limit 10 $B/gdnbench verify --variants fused_decode --frontend on --T 1 --B 3,200 --H 4 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/$tool.csv --no-progress > $R/$tool.log 2>&1 & pids+=($!)
done
wait $g; echo "gate rc=$? $(tail -1 $R/gate.log)"
grep -E " FAIL " $R/gate.log | head -5
wait $t; echo "tests rc=$?"; tail -2 $R/tests_gpu.log
grep -B3 -A14 "FAILED" $R/tests_gpu.log | head -30
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -n 1) | PASS $(grep -c PASS $R/$tool.csv)"; done
step timing
build-gpu/probe_flush | tee $R/probe_flush.txt
for rep in 1 2; do for v in v15 v14; do
  timeout 60 build-gpu/$v/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/decode_${v}_$rep.csv --no-progress > $R/decode_${v}_$rep.log 2>&1; echo "decode $v $rep rc=$? $(grep '^fused' $R/decode_${v}_$rep.log | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
