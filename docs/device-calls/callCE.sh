#!/usr/bin/env bash
# Call CE (run 94): run 93's one failing [gpu] case (recurrent, fp32, T = 1, K = 100, seed
# 13261218886090693677) again: the verify line with that seed, alone and repeated, and the test case.
set -u
R=$OUT/ce; mkdir -p $R
B=build-gpu/main
for h0 in off on; do for i in 1 2 3; do
  $B/gdnbench verify --variants recurrent --B 2 --T 1 --H 1 --HV 2 --K 100 --V 72 --dtypes fp32 --h0 $h0 --seed 13261218886090693677 --out $R/v_${h0}_$i.csv --no-progress > $R/v_${h0}_$i.log 2>&1; echo "verify h0 $h0 $i rc=$? $(grep '^recurrent' $R/v_${h0}_$i.log | awk '{print $11, $12, $14}')"
done; done
for i in 1 2 3; do timeout 100 $B/gdnbench_tests "recurrent matches the float64 reference on the GPU" > $R/t_$i.log 2>&1; echo "test $i rc=$? $(tail -n 2 $R/t_$i.log | head -n 1)"; grep -A6 FAILED $R/t_$i.log | head -8; done
compute-sanitizer --tool racecheck $B/gdnbench verify --variants recurrent --B 2 --T 1 --H 1 --HV 2 --K 100 --V 72 --dtypes fp32 --h0 off,on --seed 13261218886090693677 --out $R/rc.csv --no-progress > $R/rc.log 2>&1; echo "racecheck: $(grep SUMMARY $R/rc.log | tail -1)"
compute-sanitizer --tool initcheck $B/gdnbench verify --variants recurrent --B 2 --T 1 --H 1 --HV 2 --K 100 --V 72 --dtypes fp32 --h0 off,on --seed 13261218886090693677 --out $R/ic.csv --no-progress > $R/ic.log 2>&1; echo "initcheck: $(grep SUMMARY $R/ic.log | tail -1)"
( cd $OUT && tar czf ce.tgz ce )
