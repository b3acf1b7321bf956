#!/usr/bin/env bash
# Call D: the initcheck finding in attn_naive, initcheck and racecheck of what call C left out,
# the large-index suite.
set -u
export GDNBENCH_BUILD=build-gpu
R=$OUT/d; mkdir -p $R
B=build-gpu/gdnbench
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf d.tgz d ); }
step initcheck attn_naive fp32 vs bf16 vs fp16
for dt in fp32 bf16 fp16; do
  timeout 15 compute-sanitizer --tool initcheck --print-limit 3 $B verify --variants attn_naive --dtypes $dt --T 17,100 --K 64 --V 64 --out $R/naive_$dt.csv --no-progress > $R/naive_$dt.log 2>&1
  echo "$dt rc=$? $(grep -c 'Uninitialized' $R/naive_$dt.log) reports; $(grep 'ERROR SUMMARY' $R/naive_$dt.log)"
done
step initcheck without attn_naive
SANITIZE_TOOLS=initcheck SANITIZE_TIMEOUT=80 SANITIZE_VARIANTS=recurrent,chunked,wy_ut,unfused_conv,fused_conv,fused_decode,fused_decode_bf16state,attn_flash,attn_decode timeout 105 scripts/sanitize_gate.sh $R/init > /dev/null 2>&1; echo "init rc=$?"; cat $R/init/summary.txt
step racecheck front end and attention
SANITIZE_TOOLS=racecheck SANITIZE_TIMEOUT=70 SANITIZE_VARIANTS=unfused_conv,fused_conv,fused_decode,fused_decode_bf16state,attn_flash,attn_decode timeout 95 scripts/sanitize_gate.sh $R/race > /dev/null 2>&1; echo "race rc=$?"; cat $R/race/summary.txt
step large
timeout 90 $B verify --suite large --out $R/large.csv --no-progress > $R/large.log 2>&1; echo "large rc=$?"; tail -8 $R/large.log
step done
