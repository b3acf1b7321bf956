#!/usr/bin/env bash
# Call AW (run 60): fused_decode version 9 with v computed before griddepcontrol.wait (v9a, run
# 59's) and after it (v9b: -DGDNBENCH_DECODE_V_AFTER_WAIT=1) against version 8 (base): SASS of the
# lane kernel, timing alternated, ncu at B = 64.
set -u
R=$OUT/aw; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf aw.tgz aw ); }
step sass
K='_ZN41_GLOBAL__N__acd6d9da_9_decode_cu_593fe96522gdn_decode_lane_kernelI13__nv_bfloat16fLi128ELb1ELi3EEEv17GdnFrontEndParamsPKf'
for b in v9a v9b; do
  cuobjdump -sass build-gpu/$b/obj/decode.cu.o > $R/all_$b.sass 2>&1
  awk -v k="$K" '/Function : /{p = index($0, k) > 0} p' $R/all_$b.sass > $R/lane_$b.sass; rm $R/all_$b.sass
  echo "$b: $(wc -l < $R/lane_$b.sass) lines; first LDG.E lines:"; grep -n "LDG\|STG\|BAR\|STL\|LDL\|ACQBULK\|MUFU" $R/lane_$b.sass | head -12 | cut -c1-100
done
step timing
for rep in 1 2; do for b in base v9a v9b; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -5 $R/dec_${b}_$rep.log | head -4 | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';')"
done; done
step ncu
for b in v9b; do
  timeout 60 ncu --clock-control none --section SpeedOfLight -k regex:"decode" -c 2 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.2 --no-progress > $R/ncu_$b.log 2>&1; echo "ncu $b rc=$?"; grep -E "gdn_decode|Duration|DRAM Throughput" $R/ncu_$b.log | head -8
done
step done
