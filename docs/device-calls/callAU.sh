#!/usr/bin/env bash
# Call AU (run 58): fused_conv version 3 (fc2, 5e5e31f): the gate's front-end lines, synccheck,
# timing at 4K and 64K against main (main54).
set -u
R=$OUT/au; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf au.tgz au ); }
row() { grep -E '^(fused_conv|unfused_conv) ' $1 | awk '{print $1 "/T" $4 ":" $(NF-1)}' | tr '\n' ' '; }
step gate and synccheck
timeout 40 compute-sanitizer --tool synccheck --print-limit 20 build-gpu/fc2/gdnbench verify --variants fused_conv --frontend on --T 8,65,520 --B 4 --H 4 --HV 24 --K 128 --V 64 --h0 on --dtypes bf16 --out $R/synccheck.csv --no-progress > $R/synccheck.log 2>&1 &
q=$!
timeout 40 build-gpu/fc2/gdnbench verify --suite gate --variants fused_conv,unfused_conv --out $R/gate_fc2.csv --no-progress > $R/gate_fc2.log 2>&1; echo "gate rc=$? $(tail -1 $R/gate_fc2.log)"
wait $q; echo "synccheck: $(grep SUMMARY $R/synccheck.log | tail -1) | $(tail -n 1 $R/synccheck.log)"
step timing
for b in main54 fc2; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants unfused_conv,fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 4096,65536 --dtypes bf16 --out $R/t_${b}.csv --no-progress > $R/t_${b}.log 2>&1; echo "$b rc=$? $(row $R/t_${b}.log)"
done
step done
