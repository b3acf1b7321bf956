#!/usr/bin/env bash
# One device call on main's binaries: the peers' training steps (FLA, FlashQLA, SDPA flash and cuDNN) judged under --tolerances
# bf16_intermediates (so they PASS and are timed) beside gdnbench's recurrent backward; the bytes
# of the wgmma chain plan's three kernels at 16K (ncu); gdnbench._core built there and the peers
# judged in-process (scripts/verify_peers.py); racecheck run to the end on attn_naive's backward and
# --segments (run 135 cut both at 30 s). Tarred after every step.
set -u
R=$OUT/r; mkdir -p "$R" build
tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
pack() { tar -cJf "$OUT/r.tar.xz" -C "$OUT" r; }
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; pack; }
site=/tmp/site; mkdir -p $site && tar -xJf .peers/site.tar.xz -C $site
E="env EXT_SITE=$site scripts/ext_gpu.sh"
step ext_train 170 $E "$R/ext_train" --variants ext:flashqla,ext:fla_chunk,ext:sdpa_flash,ext:sdpa_cudnn --pass fwdbwd \
  --tolerances bf16_intermediates --H 32 --T 8192 --check-max-T 4096 > /dev/null 2>&1
step ext_train_gva 90 $E "$R/ext_train_gva" --variants ext:flashqla,ext:fla_chunk --pass fwdbwd --tolerances bf16_intermediates \
  --H 16 --HV 32 --T 8192 > /dev/null 2>&1
step recurrent_train 60 build/gdnbench run --no-ceilings --no-progress --dtypes bf16 --variants recurrent,wy_ut --pass fwd,fwdbwd \
  --B 1 --H 32 --K 128 --V 128 --T 8192 --out "$R/recurrent_train.csv" > "$R/recurrent_train.log" 2>&1
step ncu_bytes 70 ncu --kernel-name regex:"wy_ut" --launch-skip 3 --launch-count 3 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  build/gdnbench run --no-ceilings --dtypes bf16 --variants wy_ut --plan wgmma_chain --B 1 --H 32 --K 128 --V 128 --T 16384 \
  --min-samples 1 --max-samples 1 --warmup 0 --out "$R/ncu_run.csv" > "$R/ncu_bytes.txt" 2>&1
step pymod 60 scripts/gpu_python_module.sh .dev/pymod.tar.xz > "$R/pymod.log" 2>&1
step verify_peers 120 env PYTHONPATH=build/python:$site PYTHONUNBUFFERED=1 python3 scripts/verify_peers.py --suite gate \
  --select-max-tokens 4096 --out "$R/verify_peers" > "$R/verify_peers.log" 2>&1
tail -3 "$R/verify_peers.log" >> "$R/summary.txt"
A="build/gdnbench verify --variants attn_naive --pass bwd,fwdbwd --plan cublas --B 2 --T 1,65 --K 64 --V 40 --no-progress"
S="build/gdnbench verify --variants recurrent,chunked,wy_ut --B 1 --H 2 --HV 4 --K 64 --V 32 --T 130 --h0 on --segments 2 --no-progress"
step san_attn_racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 $A --out "$R/san_attn.csv" > "$R/san_attn_racecheck.log" 2>&1
step san_seg_racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 $S --out "$R/san_seg.csv" > "$R/san_seg_racecheck.log" 2>&1
for f in "$R"/san_*.log; do echo "$(basename $f): $(tail -1 $f)"; done >> "$R/summary.txt"; pack
cat "$R/summary.txt"
