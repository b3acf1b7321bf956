#!/usr/bin/env bash
# Call AJ (run 47): the SASS of main's wy_ut scan kernel (bf16, K = 128) and its executed
# instruction mix at T = 16384 (ncu InstructionStats), to count where a step's instructions go.
set -u
R=$OUT/aj; mkdir -p $R
cuobjdump -sass build-gpu/main/gdnbench > $R/all.sass 2>&1; echo "cuobjdump rc=$?"
python3 - "$R" <<'PY' || awk '/Function : .*gdn_wy_ut_state_kernelI13__nv_bfloat16Li128/{p=1} p&&/Function : /&&!/state_kernelI13__nv_bfloat16Li128/{p=0} p' $R/all.sass > $R/scan_bf16_128.sass
import sys,re
R=sys.argv[1]; s=open(R+'/all.sass').read()
parts=re.split(r'(?=\n\s*Function : )',s)
for p in parts:
    if 'gdn_wy_ut_state_kernelI13__nv_bfloat16Li128' in p.split('\n',2)[1]:
        open(R+'/scan_bf16_128.sass','w').write(p)
PY
wc -l $R/scan_bf16_128.sass; rm -f $R/all.sass
timeout 90 ncu --clock-control none --section InstructionStats --section SourceCounters -k regex:"wy_ut.*state" -c 1 build-gpu/main/gdnbench run --no-ceilings --variants wy_ut --B 1 --H 32 --K 128 --V 128 --T 16384 --dtypes bf16 --no-progress > $R/ncu_main_instr.log 2>&1; echo "ncu rc=$?"
( cd $OUT && tar czf aj.tgz aj )
