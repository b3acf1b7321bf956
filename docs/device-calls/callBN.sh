#!/usr/bin/env bash
# Call BN (run 77): main (base) against v13 (the vector front end's whole-sector stores with the
# stage as dynamic shared memory, only from 2 blocks per SM) and v13l1 (v13 with one-warp
# LaneNarrow blocks, 12 per SM): tests, the gate's decode lines, timing alternated, ncu, sanitizers.
set -u
R=$OUT/bn; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf bn.tgz bn ); }
step tests and gate
for b in v13 v13l1; do
  timeout 60 build-gpu/$b/gdnbench_tests "[gpu][frontend]" > $R/tests_fe_$b.log 2>&1; echo "tests $b rc=$?"; tail -n 2 $R/tests_fe_$b.log
  grep -B3 -A12 "FAILED" $R/tests_fe_$b.log | head -30
  timeout 40 build-gpu/$b/gdnbench verify --suite gate --variants fused_decode,fused_decode_bf16state --out $R/gate_$b.csv --no-progress > $R/gate_$b.log 2>&1; echo "gate $b rc=$? $(tail -n 1 $R/gate_$b.log)"
done
step timing
for rep in 1 2; do for b in base v13 v13l1; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,16,32,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --max-seconds 0.5 --out $R/dec_${b}_$rep.csv --no-progress > $R/dec_${b}_$rep.log 2>&1; echo "dec $b $rep rc=$? $(tail -n 13 $R/dec_${b}_$rep.log | head -n 12 | awk '{print $3, $(NF-1)}' | tr '\n' ';')"
done; done
for b in base v13 v13l1; do
  timeout 30 build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 2,4 --h0 on --max-seconds 0.5 --out $R/dect_${b}.csv --no-progress > $R/dect_${b}.log 2>&1; echo "T24 $b rc=$? $(grep '^fused' $R/dect_${b}.log | awk '{print $4, $(NF-1)}' | tr '\n' ';')"
done
step ncu
for b in base v13; do for B in 8 64; do
  timeout 40 ncu --clock-control none --section SpeedOfLight --launch-skip 2 -c 1 -k regex:decode_frontend build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B $B --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/ncufe_${b}_$B.csv > $R/ncufe_${b}_$B.log 2>&1; echo "ncu fe $b B=$B rc=$? $(grep -E 'Duration|DRAM Throughput' $R/ncufe_${b}_$B.log | tr -s ' ' | tr '\n' ';')"
done; done
for b in base v13l1; do
  timeout 40 ncu --clock-control none --section SpeedOfLight --section Occupancy --launch-skip 2 -c 1 -k regex:decode_lane build-gpu/$b/gdnbench run --no-ceilings --variants fused_decode --frontend on --dtypes bf16 --B 64 --H 32 --K 128 --V 128 --T 1 --h0 on --max-samples 10 --min-samples 10 --warmup 0 --no-progress --out $R/ncul_${b}.csv > $R/ncul_${b}.log 2>&1; echo "ncu lane $b rc=$? $(grep -E 'Duration|DRAM Throughput|Achieved Occupancy|Registers Per' $R/ncul_${b}.log | tr -s ' ' | tr '\n' ';')"
done
step sanitizers
pids=()
for tool in memcheck racecheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v13/gdnbench verify --variants fused_decode --frontend on --T 1,3 --B 600 --H 2 --HV 4 --K 64 --V 64 --h0 on --dtypes bf16 --out $R/${tool}_ws.csv --no-progress > $R/${tool}_ws.log 2>&1 & pids+=($!)
  timeout 80 compute-sanitizer --tool $tool --print-limit 20 build-gpu/v13l1/gdnbench verify --variants fused_decode --frontend on --T 1 --B 5,300 --H 2 --HV 4 --K 100,128 --V 72,128 --h0 on --dtypes bf16,fp32 --out $R/${tool}_l1.csv --no-progress > $R/${tool}_l1.log 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
for tool in memcheck racecheck synccheck; do for w in ws l1; do echo "$tool $w: $(grep SUMMARY $R/${tool}_$w.log | tail -n 1) | $(tail -n 1 $R/${tool}_$w.log) | cases $(grep -c PASS $R/${tool}_$w.csv)"; done; done
step done
