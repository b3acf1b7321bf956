#!/usr/bin/env bash
# One device call on main's binaries: packed batches of 16K tokens (16 x 1024, 4 x 4096, 16 drawn in
# [1, 2047]) through gdnbench's wy_ut, chunked and recurrent and through FLA's and FlashQLA's
# cu_seqlens; issue 27's other shapes (B 4 H 64 8K; H 16 HV 32 32K; K = V = 64 and 256 at 8K) for
# wy_ut (auto and the chain) beside the peers (ext_runner, CUDA graphs); attention's training step.
# Tarred after every step.
set -u
R=$OUT/r; mkdir -p "$R" build
tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
pack() { tar -cJf "$OUT/r.tar.xz" -C "$OUT" r; }
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; pack; }
G="build/gdnbench run --no-ceilings --no-progress --dtypes bf16"
W="$G --variants wy_ut --plan auto,wgmma_chain"
site=/tmp/site; mkdir -p $site && tar -xJf .peers/site.tar.xz -C $site
E="env EXT_SITE=$site scripts/ext_gpu.sh"
n=0; for s in '1024*16' '4096*4' 'random:16:1-2047'; do n=$((n+1))
  step packed$n 20 $G --variants wy_ut,chunked,recurrent --H 32 --K 128 --V 128 --seqlens "$s" --out "$R/packed$n.csv" >> "$R/packed.log" 2>&1
done
step ext_packed 80 $E "$R/ext_packed" --variants ext:fla_chunk,ext:flashqla --graph --H 32 \
  --seqlens '1024*16' --seqlens '4096*4' --seqlens 'random:16:1-2047' > /dev/null 2>&1
step wy_ut_b4 25 $W --B 4 --H 64 --K 128 --V 128 --T 8192 --out "$R/wy_ut_b4.csv" > "$R/wy_ut_shapes.log" 2>&1
step wy_ut_gva 25 $W --B 1 --H 16 --HV 32 --K 128 --V 128 --T 32768 --out "$R/wy_ut_gva.csv" >> "$R/wy_ut_shapes.log" 2>&1
step wy_ut_k64_k256 25 $W --B 1 --H 32 --K 64,256 --V 64,256 --T 8192 --out "$R/wy_ut_k.csv" >> "$R/wy_ut_shapes.log" 2>&1
step ext_b4 60 $E "$R/ext_b4" --variants ext:fla_chunk,ext:flashqla --graph --B 4 --H 64 --T 8192 > /dev/null 2>&1
step ext_gva 60 $E "$R/ext_gva" --variants ext:fla_chunk,ext:flashqla --graph --H 16 --HV 32 --T 32768 > /dev/null 2>&1
step ext_k64 25 $E "$R/ext_k64" --variants ext:fla_chunk,ext:flashqla --graph --H 32 --K 64 --V 64 --T 8192 > /dev/null 2>&1
step attn_train 35 $G --variants attn_naive,attn_flash --pass fwd,fwdbwd --B 1 --H 32 --K 128 --V 128 --T 1024,2048,4096 --out "$R/attn_train.csv" > "$R/attn_train.log" 2>&1
cat "$R/summary.txt"
