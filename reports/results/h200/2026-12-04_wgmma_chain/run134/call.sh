#!/usr/bin/env bash
# One device call: exp(gamma) by the operands kernel (the producer only copies): sanitizers, the
# forced gate, the growing state over seeds, times. Results tarred after every step.
set -u
R=$OUT/r; mkdir -p "$R" build
tar -xJf .dev/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt" 2>&1
pack() { tar -cJf "$OUT/r.tar.xz" -C "$OUT" r; }
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; pack; }
S="build/gdnbench verify --variants wy_ut --plan wgmma_chain --dtypes bf16,fp16 --B 1 --H 1 --T 200 --K 64,128 --V 64 --h0 on --no-progress"
for tool in racecheck synccheck memcheck initcheck; do
  step san_$tool 40 compute-sanitizer --tool $tool --error-exitcode 9 $S --out "$R/san_$tool.csv" > "$R/san_$tool.log" 2>&1
done
step chain_gate 60 build/gdnbench verify --suite gate --variants wy_ut,unfused_conv --plan wgmma_chain \
  --out "$R/chain_gate.csv" --no-progress > "$R/chain_gate.log" 2>&1
tail -1 "$R/chain_gate.log" >> "$R/summary.txt"
G="--variants wy_ut --plan wgmma_chain --dtypes bf16 --K 64,128 --V 64 --k-norm 2 --beta-dist one --gate-dist zero --h0 on --no-progress"
for i in 1 2 3 4 5 6 7 8; do
  step growth_$i 20 build/gdnbench verify $G --T 129,300 --out "$R/growth_$i.csv" > "$R/growth_$i.log" 2>&1
done
T="--no-ceilings --dtypes bf16 --variants wy_ut --no-progress"
step t16 60 build/gdnbench run $T --B 1 --H 32 --K 128 --V 128 --T 16384 --plan auto,wgmma_chain --out "$R/t16.csv" > "$R/t16.log" 2>&1
step t64 60 build/gdnbench run $T --B 1 --H 32 --K 128 --V 128 --T 65536 --plan wgmma_chain --out "$R/t64.csv" > "$R/t64.log" 2>&1
step tb4 60 build/gdnbench run $T --B 4 --H 64 --K 128 --V 128 --T 8192 --plan wgmma_chain --out "$R/tb4.csv" > "$R/tb4.log" 2>&1
step tk64 60 build/gdnbench run $T --B 1 --H 32 --K 64 --V 64 --T 8192 --plan auto,wgmma_chain --out "$R/tk64.csv" > "$R/tk64.log" 2>&1
gzip -f "$R/chain_gate.csv"; pack
cat "$R/summary.txt"
