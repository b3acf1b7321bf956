#!/usr/bin/env bash
# Call C: finish the scaling and decode suites (--resume), then compute-sanitizer over the gate.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/c; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; }
cp build-gpu/scaling.csv build-gpu/decode.csv $R/
step scaling resume
timeout 75 $B run --suite scaling --attention-ref sampled --max-seconds 1 --resume --out $R/scaling.csv --no-progress > $R/scaling.log 2>&1; echo "scaling rc=$?"; tail -3 $R/scaling.log
step decode resume
timeout 25 $B run --suite decode --no-ceilings --max-seconds 1 --resume --out $R/decode.csv --no-progress > $R/decode.log 2>&1; echo "decode rc=$?"; tail -2 $R/decode.log
step sanitizers
SANITIZE_TOOLS="memcheck synccheck initcheck" SANITIZE_TIMEOUT=95 timeout 350 scripts/sanitize_gate.sh $R/san1 > $R/san1.log 2>&1; echo "san1 rc=$?"; cat $R/san1/summary.txt
step racecheck
left=$((560 - (SECONDS - start))); echo "racecheck gets $left s"
SANITIZE_TOOLS=racecheck SANITIZE_TIMEOUT=$left timeout $((left + 5)) scripts/sanitize_gate.sh $R/san2 > $R/san2.log 2>&1; echo "san2 rc=$?"; cat $R/san2/summary.txt
step done
cd $OUT && tar czf c.tgz c && rm -rf c
