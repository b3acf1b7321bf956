#!/usr/bin/env bash
# Call G: timings. The scaling suite's fixed-budget lines (resumed onto the committed CSV), the
# memory and claims suites, the external implementations at T = 1K..16K.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/g; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf g.tgz g ); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
step scaling fixed-budget lines
cp build-gpu/scaling_resume.csv $R/scaling.csv
timeout 70 $B run --suite scaling --resume --out $R/scaling.csv --no-progress > $R/scaling.log 2>&1; echo "scaling rc=$?"; grep -E " (16|4) +(1024|4096) " $R/scaling.log | head -20; tail -1 $R/scaling.log
step memory suite
timeout 110 $B run --suite memory --out $R/memory.csv --no-progress > $R/memory.log 2>&1; echo "memory rc=$?"; tail -1 $R/memory.log
step claims suite
timeout 140 $B run --suite claims --out $R/claims.csv --no-progress > $R/claims.log 2>&1; echo "claims rc=$?"; tail -1 $R/claims.log
timeout 20 $B claims $R/claims.csv > $R/claims_verdicts.txt 2>&1; echo "verdicts rc=$?"; cat $R/claims_verdicts.txt | head -40
step ext
timeout 170 scripts/ext_gpu.sh $R/ext --T 1024,2048,4096,8192,16384 --check-max-T 2048 --variant-timeout 60 > $R/ext.log 2>&1; echo "ext rc=$?"; tail -25 $R/ext.log
timeout 20 $B claims $R/claims.csv $R/ext/ext.csv > $R/claims_verdicts_ext.txt 2>&1; grep -A3 speedup_8k $R/claims_verdicts_ext.txt | head -8
step done
