#!/usr/bin/env bash
# One device call: the o epilogue through shared memory (new) against run 132's kernel (prev).
set -u
R=$OUT/r; mkdir -p "$R" build binprev
tar -xJf .dev/bin.tar.xz -C build && tar -xJf .dev/bin_prev.tar.xz -C binprev
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; }
step chain_gate 90 build/gdnbench verify --suite gate --variants wy_ut,unfused_conv --plan wgmma_chain \
  --out "$R/chain_gate.csv" --no-progress > "$R/chain_gate.log" 2>&1
tail -1 "$R/chain_gate.log" >> "$R/summary.txt"
T="--no-ceilings --dtypes bf16 --variants wy_ut --no-progress"
for i in 1 2; do for b in binprev build; do
  step ab_${b}_$i 60 $b/gdnbench run $T --B 1 --H 32 --K 128 --V 128 --T 16384,65536 --plan wgmma_chain --out "$R/ab_${b}_$i.csv" > "$R/ab_${b}_$i.log" 2>&1
  step ab4_${b}_$i 60 $b/gdnbench run $T --B 4 --H 64 --K 128 --V 128 --T 8192 --plan wgmma_chain --out "$R/ab4_${b}_$i.csv" > "$R/ab4_${b}_$i.log" 2>&1
  step ab64_${b}_$i 60 $b/gdnbench run $T --B 1 --H 32 --K 64 --V 64 --T 8192 --plan wgmma_chain --out "$R/ab64_${b}_$i.csv" > "$R/ab64_${b}_$i.log" 2>&1
done; done
step auto 60 build/gdnbench run $T --B 1 --H 32 --K 128 --V 128 --T 1024,4096,16384,65536 --plan auto --out "$R/auto.csv" > "$R/auto.log" 2>&1
step ncu 90 ncu --kernel-name regex:"chain_wgmma" --launch-count 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy build/gdnbench run $T --B 1 --H 32 --K 128 --V 128 --T 16384 --plan wgmma_chain \
  --min-samples 1 --max-samples 1 --out "$R/ncu_run.csv" > "$R/ncu.txt" 2>&1
S="build/gdnbench verify --variants wy_ut --plan wgmma_chain --dtypes bf16,fp16 --B 1 --H 1 --T 200 --K 64,128 --V 64 --h0 on --no-progress"
for tool in memcheck racecheck synccheck initcheck; do
  step san_$tool 60 compute-sanitizer --tool $tool --error-exitcode 9 $S --out "$R/san_$tool.csv" > "$R/san_$tool.log" 2>&1
done
step gpu_gate 330 scripts/gpu_gate.sh "$R/gate"
gzip -f "$R/chain_gate.csv" "$R/gate/gate.csv" 2>/dev/null
tar -cJf "$OUT/r.tar.xz" -C "$OUT" r
cat "$R/summary.txt"
