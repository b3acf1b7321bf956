#!/usr/bin/env bash
# Call P (run 27b): racecheck of the reduced gate for main's wy_ut (869f27f), split by T and dtype.
set -u
R=$OUT/p; mkdir -p $R
for T in 1 17 65; do for dt in bf16 fp16; do
  timeout --signal=INT --kill-after=5 48 compute-sanitizer --tool racecheck --print-limit 20 build-gpu/gdnbench verify --suite build-gpu/gate_reduced.ini --variants wy_ut --T $T --dtypes $dt --frontend off --no-progress --out $R/rc_wy_T${T}_$dt.csv > $R/rc_wy_T${T}_$dt.log 2>&1 &
done; done
wait
for f in $R/*.log; do echo "$(basename $f): $(grep SUMMARY $f | tail -1) | $(tail -1 $f)"; done
