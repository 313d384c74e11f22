#!/usr/bin/env bash
# Session 46, call l46b (H200): the rule of choose_linear_decode_nvfp4 (linear_dispatch.h, fitted
# on l46a's sweep) at every token count 1..8: 1) parity of linear_decode_nvfp4 and
# linear_decode_repacked; 2) bench_linear_gemm --nvfp4-ring-ab, three alternating passes, T = 1..8;
# 3) test_gpu_model --only-repacked-dense and the whole test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l46b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear_decode_nvfp4|linear_decode_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 400 $G/bench_linear_gemm --nvfp4-ring-ab 3 1,2,3,4,5,6,7,8 > $L/ring_ab.txt 2>&1
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
    print(head[11:40], head[-8:], '| ld %.1f%% | rule %.1f%% x%.3f | best %s %.1f%% x%.3f'%(ld[1],ru[1],ru[2],bk[1],cells[bk[1]][1],bk[0]))
PY
save
timeout -s KILL 200 $G/test_gpu_model --only-repacked-dense > $L/gpu_model_dense.txt 2>&1; echo "exit $?" >> $L/gpu_model_dense.txt
echo "== gpu_model dense t=$(el)"; grep -E "gpu-repacked-dense|passed" $L/gpu_model_dense.txt | cut -c1-260
save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
