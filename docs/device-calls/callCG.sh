#!/usr/bin/env bash
# Call CG (run 96): the one-launch step in CTA pairs (GDNBENCH_EXP_PAIR=1: a 2-CTA cluster per
# (b, h), 2 warps and 32 KiB of slice each, q and k shared through distributed shared memory) against
# the same binary without it (version 14's 4-warp blocks); verify and sanitizers first.
set -u
R=$OUT/cg; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cg.tgz cg ); }
X=build-gpu/pair/gdnbench
GDNBENCH_EXP_PAIR=1 timeout 60 $X verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_pair.csv --no-progress > $R/verify_pair.log 2>&1; echo "verify pair rc=$? $(tail -n 1 $R/verify_pair.log)"
grep -E " FAIL " $R/verify_pair.log | head -3
pids=()
for tool in memcheck racecheck synccheck; do
  GDNBENCH_EXP_PAIR=1 timeout 120 compute-sanitizer --tool $tool --print-limit 10 $X verify --variants fused_decode --frontend on --T 1 --B 3,64 --H 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/$tool.csv --no-progress > $R/$tool.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep SUMMARY $R/$tool.log | tail -n 1) | PASS $(grep -c PASS $R/$tool.csv)"; done
step timing
for rep in 1 2 3; do for mode in 0 1; do
  GDNBENCH_EXP_PAIR=$mode timeout 40 $X run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${mode}_$rep.csv --no-progress > $R/dec_${mode}_$rep.log 2>&1; echo "dec pair=$mode $rep rc=$? $(grep '^fused' $R/dec_${mode}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
