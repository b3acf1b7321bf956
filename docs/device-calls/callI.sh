#!/usr/bin/env bash
# Call I: fused_decode with version 4's front end and version 3's state kernel (3481b43): tests,
# gate, timings, ncu; then chunked's racecheck resumed from call H's CSVs (concurrent, no timings).
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/i; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf i.tgz i ); }
step tests and gate
timeout 40 build-gpu/gdnbench_tests "[gpu][frontend]" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests.log
timeout 60 $B verify --suite gate --attention-ref auto --variants fused_decode,fused_decode_bf16state --out $R/gate_dec.csv --no-progress > $R/gate_dec.log 2>&1; echo "gate rc=$?"; tail -1 $R/gate_dec.log
step timings
timeout 40 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec.csv --no-progress > $R/dec.log 2>&1; echo "dec rc=$?"; tail -9 $R/dec.log
timeout 40 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 2 $B run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --min-samples 1 --max-samples 1 --warmup 0 --out $R/ncu_dec.csv --no-progress > $R/ncu_dec.log 2>&1; grep -E "decode_|Duration|DRAM Throughput|Compute \(SM\)" $R/ncu_dec.log | head -8
step chunked racecheck resumed
cp build-gpu/race_resume/*.csv $R/
pids=()
for T in 1 17 65; do for dt in bf16 fp32; do
  timeout --signal=INT --kill-after=10 240 compute-sanitizer --tool racecheck --error-exitcode 99 --print-limit 100 $B verify --suite build-gpu/gate_reduced.ini --variants chunked --T $T --dtypes $dt --frontend off --no-progress --resume --out $R/race_chunked_T${T}_$dt.csv > $R/race_chunked_T${T}_$dt.log 2>&1 &
  pids+=($!)
done; done
for p in "${pids[@]}"; do wait $p; done
for f in $R/race_chunked_*.log; do echo "$(basename $f): $(grep -c '^=========' $f) sanitizer lines; $(grep 'SUMMARY' $f | tail -1) | $(tail -1 $f)"; done
step done
