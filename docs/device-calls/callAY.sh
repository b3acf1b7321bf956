#!/usr/bin/env bash
# Call AY (run 62): main's head (ba0c38c) as it lands: the forward sweep of wy_ut, chunked and
# recurrent over T = 1K..64K with the ceilings measured first (the report's fraction of the
# floor), wy_ut at issue 5's other shapes, fused_conv against unfused_conv at 4K..64K, and
# fused_decode over B.
set -u
R=$OUT/ay; mkdir -p $R
start=$SECONDS
step() { echo "== [$((SECONDS-start))s] $*"; ( cd $OUT && tar czf ay.tgz ay ); }
B=build-gpu/final/gdnbench
step sweep
timeout 240 $B run --variants wy_ut,chunked,recurrent --B 1 --H 32 --K 128 --V 128 --T 1024,2048,4096,8192,16384,32768,65536 --dtypes bf16 --out $R/fwd_bf16_B1_H32_K128_v7.csv --no-progress > $R/fwd.log 2>&1; echo "sweep rc=$?"; grep -E "^(wy_ut|chunked|recurrent) " $R/fwd.log | awk '{print $1, $4, $(NF-1)}' | tr '\n' ';'; echo
step other shapes
timeout 60 $B run --no-ceilings --variants wy_ut --B 4 --H 64 --K 128 --V 128 --T 8192 --dtypes bf16 --out $R/other_B4_H64.csv --no-progress > $R/other1.log 2>&1; echo "B4 H64 rc=$? $(grep '^wy_ut' $R/other1.log | awk '{print $(NF-1)}')"
timeout 60 $B run --no-ceilings --variants wy_ut --B 8 --H 32 --K 256 --V 256 --T 2048 --dtypes bf16 --out $R/other_K256.csv --no-progress > $R/other2.log 2>&1; echo "K256 rc=$? $(grep '^wy_ut' $R/other2.log | awk '{print $(NF-1)}')"
timeout 60 $B run --no-ceilings --variants wy_ut --B 1 --H 16 --HV 32 --K 128 --V 128 --T 32768 --dtypes bf16 --out $R/other_gva.csv --no-progress > $R/other3.log 2>&1; echo "GVA rc=$? $(grep '^wy_ut' $R/other3.log | awk '{print $(NF-1)}')"
step frontend
timeout 120 $B run --no-ceilings --variants unfused_conv,fused_conv --frontend on --B 1 --H 32 --K 128 --V 128 --T 4096,16384,65536 --dtypes bf16 --out $R/frontend_fused_unfused.csv --no-progress > $R/fe.log 2>&1; echo "frontend rc=$?"; grep -E "^(unfused_conv|fused_conv) " $R/fe.log | awk '{print $1, $4, $(NF-1)}' | tr '\n' ';'; echo
step decode
timeout 60 $B run --no-ceilings --variants fused_decode,fused_decode_bf16state --frontend on --dtypes bf16 --B 1,8,64,256 --H 32 --K 128 --V 128 --T 1 --h0 on --out $R/decode.csv --no-progress > $R/decode.log 2>&1; echo "decode rc=$?"; grep -E "^fused_decode" $R/decode.log | awk '{print $1, $3, $(NF-1)}' | tr '\n' ';'; echo
step done
