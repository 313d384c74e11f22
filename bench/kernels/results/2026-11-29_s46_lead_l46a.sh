#!/usr/bin/env bash
# Session 46, call l46a (H200): linear_decode_nvfp4 (dense NVFP4, repacked, 1..8 tokens, on the
# MoE decode kernel's W2 launch; branch s46-dense-ring). 1) parity of its cases and of
# linear_decode_repacked; 2) bench_linear_gemm --nvfp4-ring-ab: linear_decode against the rule's
# and every configuration, graphs of 16 calls on rotated copies, two alternating passes;
# 3) test_gpu_model --only-repacked-dense (bit for bit with the new path off; within the bf16
# noise bound with it on) and the whole test_gpu_model. The 120 moe_decode kernels are
# SASS-identical to main's (bodies compared on the build machine).
set -uo pipefail
nvidia-smi -L
N=l46a
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear_decode_nvfp4|linear_decode_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 240 $G/bench_linear_gemm --nvfp4-ring-ab 2 1,2,4,8 > $L/ring_ab.txt 2>&1
echo "== ring ab rc=$? t=$(el)"; grep -E "ceiling" $L/ring_ab.txt | cut -c1-120
python3 - $L/ring_ab.txt <<'PY'
import sys,re
for line in open(sys.argv[1]):
    if not line.startswith('nvfp4-ring'): continue
    parts=line.split(' | ')
    head=parts[0]; best=None
    cells={}
    for p in parts[1:]:
        m=re.match(r'(\S+) +([\d.]+) us +([\d.]+)% .*x([\d.]+)',p.strip())
        if m: cells[m.group(1)]=(float(m.group(2)),float(m.group(3)),float(m.group(4)))
    ld=cells.get('linear_decode'); ru=cells.get('rule')
    bk=max((v[2],k) for k,v in cells.items() if k not in('linear_decode',))
    print(head[:70], '| ld %.1f%% | rule %.1f%% x%.3f | best %s %.1f%% x%.3f'%(ld[1],ru[1],ru[2],bk[1],cells[bk[1]][1],bk[0]))
PY
save
timeout -s KILL 200 $G/test_gpu_model --only-repacked-dense > $L/gpu_model_dense.txt 2>&1; echo "exit $?" >> $L/gpu_model_dense.txt
echo "== gpu_model dense t=$(el)"; grep -E "gpu-repacked-dense|passed" $L/gpu_model_dense.txt | cut -c1-260
save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
