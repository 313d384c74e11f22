#!/usr/bin/env bash
# Session 46, call l46h (H200): linear_decode_nvfp4 with K slices across blocks (KSL: f32 partial
# rows per slice, summed in order by a third launch; patch 2026-11-30_s46_exp_kslices.patch over
# d28fb32, not landed), for the matrices
# of few row tiles that the rule leaves to linear_decode. 1) parity of linear_decode_nvfp4 (97
# cases: 36 new with 2 / 4 / 8 slices); 2) bench_linear_gemm --nvfp4-ring-ab, T = 1 / 2 / 4 / 8,
# two passes ("rule/ksN": the rule's launch over N slices).
set -uo pipefail
nvidia-smi -L
N=l46h
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 150 $G/bench_linear_gemm --nvfp4-ring-ab 2 1,2,4,8 > $L/ring_ab.txt 2>&1
echo "== ring ab rc=$? t=$(el)"; grep -E "ceiling" $L/ring_ab.txt | cut -c1-120
python3 - $L/ring_ab.txt <<'PY'
import sys,re
for line in open(sys.argv[1]):
    if not line.startswith('nvfp4-ring'): continue
    parts=line.split(' | ')
    cells={}
    for p in parts[1:]:
        m=re.match(r'(\S+) +([\d.]+) us +([\d.]+)% .*x([\d.]+)',p.strip())
        if m: cells[m.group(1)]=(float(m.group(2)),float(m.group(3)),float(m.group(4)))
    f=lambda k: ('%s %.1f%% x%.3f'%(k,cells[k][1],cells[k][2])) if k in cells else k+' -'
    print(parts[0][11:40], parts[0][-7:], '| ld %.1f%% |'%cells['linear_decode'][1], ' | '.join(f(k) for k in ['rule','rule/ks2','rule/ks4','rule/ks8']))
PY
save; echo "done t=$(el)"
