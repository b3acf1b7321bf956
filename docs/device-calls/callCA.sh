#!/usr/bin/env bash
# Call CA (run 90): main 8bd3f09 (run --l2-flush): the new [gpu][timing] test and the front-end
# tests, ceilings with each flush, fused_decode over B with --l2-flush write and clean alternated,
# and the report of the two (whose regression check must call them NOT COMPARABLE).
set -u
R=$OUT/ca; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ca.tgz ca ); }
step tests
timeout 200 build-gpu/head/gdnbench_tests "[gpu][timing],[gpu][frontend]" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -n 2 $R/tests.log | head -c 400
grep -B3 -A8 "FAILED" $R/tests.log | head -c 2000
step ceilings
for mode in write clean; do
  timeout 60 build-gpu/head/gdnbench ceilings --l2-flush $mode --out $R/ceil_${mode}.csv > $R/ceil_${mode}.log 2>&1; echo "ceilings $mode rc=$?"; grep copy $R/ceil_${mode}.log
done
step decode
for rep in 1 2; do for mode in write clean; do
  timeout 60 build-gpu/head/gdnbench run --l2-flush $mode --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${mode}_$rep.csv --no-progress > $R/dec_${mode}_$rep.log 2>&1; echo "dec $mode $rep rc=$? $(grep -E '^fused' $R/dec_${mode}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
build-gpu/head/gdnbench report $R/dec_write_1.csv $R/dec_clean_1.csv --out $R/report_write_clean.md > $R/report.log 2>&1; echo "report rc=$?"; grep -E "matched|l2_flush|timer" $R/report_write_clean.md | head -5
step gate
timeout 120 build-gpu/head/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate.csv --no-progress > $R/gate.log 2>&1; echo "gate rc=$? $(tail -n 1 $R/gate.log)"
step done
