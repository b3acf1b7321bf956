#!/usr/bin/env bash
# The scaled-fp16 subtract of the plain scan against the tree before: gate, a precision sweep at
# --plan plain (seed 7, both binaries), timings alternating.
set -uo pipefail
R=$OUT/r; mkdir -p $R build && tar -xJf .dev/bin.tar.xz -C build
xz -dc .dev/new/gdnbench.xz > build/gdnbench_new && chmod +x build/gdnbench_new
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > $R/gpu.txt
timeout 150 build/gdnbench_new verify --suite gate --variants wy_ut,unfused_conv,fused_conv --out $R/gate_new.csv --no-progress > $R/gate_new.log 2>&1; echo "gate new rc=$?"; tail -1 $R/gate_new.log
sweep() {  # BIN TAG
  local b=$1 tag=$2
  timeout 100 $b verify --variants wy_ut --plan plain --dtypes bf16,fp16 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64 --T 1,63,65,300,2048 --h0 on,off --gate-dist logsigmoid,zero,strong --seed 7 --out $R/sweep_gate_$tag.csv --no-progress > $R/sweep_$tag.log 2>&1; echo "sweep gate $tag rc=$?"
  timeout 60 $b verify --variants wy_ut --plan plain --dtypes bf16,fp16 --B 2 --H 2 --HV 4 --K 64,128,256 --V 64 --T 65,300 --h0 on --beta-dist zero,one --k-norm 1,1.3 --h0-scale 1,1000,1000000 --seed 7 --out $R/sweep_adv_$tag.csv --no-progress >> $R/sweep_$tag.log 2>&1; echo "sweep adv $tag rc=$?"
  timeout 60 $b verify --variants wy_ut --plan plain,auto --dtypes bf16,fp16 --B 1 --H 32 --K 128 --V 128 --T 8192 --seed 7 --out $R/sweep_long_$tag.csv --no-progress >> $R/sweep_$tag.log 2>&1; echo "sweep long $tag rc=$?"
  grep -h "passed" $R/sweep_$tag.log
}
sweep build/gdnbench base
sweep build/gdnbench_new new
for i in 1 2; do for tag in base new; do b=build/gdnbench; [ $tag = new ] && b=build/gdnbench_new
  timeout 60 $b run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 1024,4096,16384,65536 --plan plain --out $R/time_${tag}_$i.csv > /dev/null 2>&1; echo "time $tag $i rc=$?"
done; done
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
