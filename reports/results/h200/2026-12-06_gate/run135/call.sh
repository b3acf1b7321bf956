#!/usr/bin/env bash
# One device call on main 4b9602f's binaries: the full gate with its plan coverage and the [gpu]
# tests (first GPU run of the edge lines, attn_naive's backward, --segments), the gate forced onto
# the wgmma chain, and sanitizers on what has not been sanitized (attn_naive backward, segments).
# Results tarred after every step.
set -u
R=$OUT/r; mkdir -p "$R" build
tar -xJf .dev/bin.tar.xz -C build
pack() { tar -cJf "$OUT/r.tar.xz" -C "$OUT" r; }
step() { local n=$1 l=$2; shift 2; local t0=$(date +%s); timeout "$l" "$@"; echo "$n rc=$? s=$(( $(date +%s) - t0 ))" >> "$R/summary.txt"; pack; }
step gpu_gate 340 env GATE_S=200 TESTS_S=135 scripts/gpu_gate.sh "$R/gate" > "$R/gpu_gate.log" 2>&1
gzip -f "$R/gate/gate.csv"; pack
step chain_gate 60 build/gdnbench verify --suite gate --variants wy_ut,unfused_conv --plan wgmma_chain \
  --out "$R/chain_gate.csv" --no-progress > "$R/chain_gate.log" 2>&1
tail -1 "$R/chain_gate.log" >> "$R/summary.txt"
A="build/gdnbench verify --variants attn_naive --pass bwd,fwdbwd --plan cublas --B 2 --T 1,65,130 --K 64,100 --V 64,40 --no-progress"
S="build/gdnbench verify --variants recurrent,chunked,wy_ut --B 2 --H 2 --HV 4 --K 64 --V 32 --T 65,300 --h0 on,off --segments 2,3 --no-progress"
for tool in memcheck synccheck racecheck; do
  step san_attn_$tool 30 compute-sanitizer --tool $tool --error-exitcode 9 $A --out "$R/san_attn_$tool.csv" > "$R/san_attn_$tool.log" 2>&1
  step san_seg_$tool 30 compute-sanitizer --tool $tool --error-exitcode 9 $S --out "$R/san_seg_$tool.csv" > "$R/san_seg_$tool.log" 2>&1
done
step san_seg_initcheck 30 compute-sanitizer --tool initcheck --error-exitcode 9 $S --out "$R/san_seg_initcheck.csv" > "$R/san_seg_initcheck.log" 2>&1
for f in "$R"/san_*.log; do echo "$(basename $f): $(grep -c '^=========  *\(Invalid\|Race\|Barrier\|Uninit\)' $f) findings; $(tail -1 $f)"; done >> "$R/summary.txt"
pack
cat "$R/summary.txt"
