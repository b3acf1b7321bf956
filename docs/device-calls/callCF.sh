#!/usr/bin/env bash
# Call CF (run 95): qb, the quad_fe kernel with one mbarrier per quarter copy (a lane waits for its
# own row group's rows only, so its partial sums start while later quarters land;
# next/decode-quad-fe-knobs) against main 7f13135, alternated; verify first.
set -u
R=$OUT/cf; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf cf.tgz cf ); }
timeout 60 build-gpu/qb/gdnbench verify --variants fused_decode --frontend on --T 1 --B 1,3,64,200 --H 4,32 --K 128 --V 128 --h0 on,off --dtypes bf16,fp16 --out $R/verify_qb.csv --no-progress > $R/verify_qb.log 2>&1; echo "verify qb rc=$? $(tail -n 1 $R/verify_qb.log)"
timeout 120 compute-sanitizer --tool racecheck build-gpu/qb/gdnbench verify --variants fused_decode --frontend on --T 1 --B 3,64 --H 4 --K 128 --V 128 --h0 on --dtypes bf16 --out $R/rc_qb.csv --no-progress > $R/rc_qb.log 2>&1; echo "racecheck qb: $(grep SUMMARY $R/rc_qb.log | tail -1)"
step timing
for rep in 1 2 3; do for b in main qb; do
  timeout 40 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 1,8,16,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(grep '^fused' $R/dec_${b}_$rep.log | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
step done
