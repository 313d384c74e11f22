#!/usr/bin/env bash
# Session 46, call l46g (H200): linear_decode_nvfp4 without the prepare launch where x is staged
# (XRAW: the GEMM's blocks stage and convert x's raw bf16 rows; branch s46-dense-xraw). 1) parity
# of linear_decode_nvfp4 (61 cases: raw and prepared staged rows) and linear_decode_repacked;
# 2) bench_linear_gemm --nvfp4-ring-ab at T = 1..4 ("rule" = raw where staged, "rule/prep" = the
# prepare launch), 3 passes; 3) test_gpu_model --only-repacked-dense.
set -uo pipefail
nvidia-smi -L
N=l46g
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear_decode_nvfp4|linear_decode_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 200 $G/bench_linear_gemm --nvfp4-ring-ab 3 1,2,3,4 > $L/ring_ab.txt 2>&1
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
    ld=cells['linear_decode']; ru=cells['rule']; pr=cells['rule/prep']
    print(parts[0][11:48], '| ld %.2f us %.1f%% | rule %.2f us %.1f%% x%.3f | prep %.2f us %.1f%% | raw/prep x%.3f'%(ld[0],ld[1],ru[0],ru[1],ru[2],pr[0],pr[1],pr[0]/ru[0]))
PY
save
timeout -s KILL 200 $G/test_gpu_model --only-repacked-dense > $L/gpu_model_dense.txt 2>&1; echo "exit $?" >> $L/gpu_model_dense.txt
echo "== gpu_model dense t=$(el)"; grep -E "linear_decode_nvfp4|passed" $L/gpu_model_dense.txt | cut -c1-200
save; echo "done t=$(el)"
