#!/usr/bin/env bash
# (1) the product count alone: the plain scan with unscaled fp16 products (no max passes) against
# the tree before, alternating; (2) FLA's and FlashQLA's gradients judged by gdnbench check.
set -uo pipefail
R=$OUT/r; mkdir -p $R build && tar -xJf .dev/bin.tar.xz -C build
xz -dc .dev/fixed/gdnbench.xz > build/gdnbench_fixed && xz -dc .dev/base_gdnbench.xz > build/gdnbench_base && chmod +x build/gdnbench_*
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > $R/gpu.txt
for i in 1 2; do for tag in base fixed; do
  timeout 60 build/gdnbench_$tag run --no-ceilings --no-progress --dtypes bf16 --H 32 --K 128 --V 128 --variants wy_ut --B 1 --T 1024,4096,16384,65536 --plan plain --out $R/time_${tag}_$i.csv > /dev/null 2>&1; echo "time $tag $i rc=$?"
done; done
site=/tmp/site; mkdir -p $site && tar -xJf .peers/site.tar.xz -C $site
t0=$(date +%s)
EXT_SITE=$site timeout 300 scripts/ext_gpu.sh $R/ext --variants ext:flashqla,ext:fla_chunk --pass bwd --T 2048,8192 --H 32 --K 128 --V 128 > $R/ext.log 2>&1
echo "ext bwd rc=$? $(( $(date +%s) - t0 )) s"; tail -8 $R/ext.log
cd $OUT && tar -cJf r.tar.xz r && rm -rf r
