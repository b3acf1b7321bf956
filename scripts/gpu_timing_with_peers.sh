#!/usr/bin/env bash
# The headline timings of gdnbench and its peers in one GPU call, so every comparison is same-call:
# wy_ut over T = 1K..64K, the decode step (fused_decode, recurrent) at B = 1 / 64 / 256, attn_flash
# at 8K, attn_decode at B = 64, L = 8192; then FLA and FlashQLA (eager and CUDA graph) by an
# independent PyTorch timing script; then ext:flashqla and ext:fla_chunk judged by `gdnbench check`.
#   here:  tar -cJf .dev/bin.tar.xz -C build gdnbench gdnbench_tests
#          <anchors>/pack_peers.sh .peers; cp <anchors>/peers_bench.py .dev/   # carry [".dev", ".peers"]
#   there: scripts/gpu_timing_with_peers.sh OUTDIR [.dev/bin.tar.xz]
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/gpu_timing_with_peers.sh OUTDIR [BINARIES.tar.xz]" >&2; exit 2; }
R=$1; mkdir -p "$R" build
[ $# -ge 2 ] && tar -xJf "$2" -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
G=(build/gdnbench run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128)  # each step its own --out
t0=$(date +%s)
"${G[@]}" --out "$R/wy_ut.csv" --variants wy_ut --B 1 --T 1024,2048,4096,8192,16384,32768,65536 > "$R/wy_ut.log" 2>&1
"${G[@]}" --out "$R/fused_decode.csv" --variants fused_decode --frontend on --B 1,64,256 --T 1 --h0 on --max-seconds 0.5 > "$R/decode.log" 2>&1
"${G[@]}" --out "$R/recurrent.csv" --variants recurrent --B 1,64,256 --T 1 --h0 on --max-seconds 0.5 >> "$R/decode.log" 2>&1
"${G[@]}" --out "$R/attn_flash.csv" --variants attn_flash --B 1 --T 8192 > "$R/attention.log" 2>&1
"${G[@]}" --out "$R/attn_decode.csv" --variants attn_decode --B 64 --T 1 --context 8192 >> "$R/attention.log" 2>&1
echo "gdnbench $(( $(date +%s) - t0 )) s"
grep -h "PASS\|FAIL" "$R"/wy_ut.log "$R"/decode.log "$R"/attention.log
site=${EXT_SITE:-/tmp/site}; mkdir -p "$site" && tar -xJf .peers/site.tar.xz -C "$site"
t0=$(date +%s)
OUT=$R PYTHONPATH=$site FLA_FLASH_QLA=0 timeout "${PEERS_S:-240}" python3 .dev/peers_bench.py > "$R/peers.log" 2>&1
echo "peers rc=$? $(( $(date +%s) - t0 )) s"
grep "what=fwd\|what=accuracy\|what=decode" "$R/peers.log" | grep -v sdpa
t0=$(date +%s)
EXT_SITE=$site timeout "${EXT_S:-150}" scripts/ext_gpu.sh "$R/ext" --variants "${EXT_VARIANTS:-ext:flashqla,ext:fla_chunk}" \
  --T "${EXT_T:-2048}" --graph > "$R/ext.log" 2>&1
echo "ext rc=$? $(( $(date +%s) - t0 )) s"; tail -6 "$R/ext.log"
