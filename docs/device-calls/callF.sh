#!/usr/bin/env bash
# Call F: correctness only (no timings: passes run concurrently on the one GPU).
# racecheck to completion, one sanitize_gate pass per variant, all at once; the large-index suite;
# attn_naive's initcheck finding with the poisoned score workspace.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/f; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; }
step initcheck attn_naive bf16 T=15,16
timeout 30 compute-sanitizer --tool initcheck --print-limit 3 $B verify --variants attn_naive --dtypes bf16 --T 15,16 --K 64 --V 64 --out $R/naive_init.csv --no-progress > $R/naive_init.log 2>&1
echo "rc=$? $(grep -c 'Uninitialized' $R/naive_init.log) reports; $(grep 'ERROR SUMMARY' $R/naive_init.log)"; tail -2 $R/naive_init.log
step racecheck per variant, concurrently, and the large suite
pids=()
for v in $($B list | awk 'NR > 1 && $3 == "cuda" {print $1}'); do
  SANITIZE_TOOLS=racecheck SANITIZE_PER_VARIANT=1 SANITIZE_VARIANTS=$v SANITIZE_TIMEOUT=400 scripts/sanitize_gate.sh $R/race_$v > /dev/null 2>&1 &
  pids+=($!)
done
timeout 420 $B verify --suite large --out $R/large.csv --no-progress > $R/large.log 2>&1 &
lp=$!
timeout 300 $B verify --suite gate --attention-ref auto --variants attn_naive --out $R/naive_gate.csv --no-progress > $R/naive_gate.log 2>&1
echo "attn_naive gate rc=$?"; tail -1 $R/naive_gate.log
wait $lp; echo "large rc=$?"; tail -12 $R/large.log
for p in "${pids[@]}"; do wait $p; done
step racecheck summaries
cat $R/race_*/summary.txt
step done
cd $OUT && tar czf f.tgz f
