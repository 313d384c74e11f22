#!/usr/bin/env bash
# Session 35 lead, call l35d (H200): (1) the SASS of the ws attention kernels that l35c's racecheck flagged (alt
# schedule, fold / split_keep modes) around the reported offsets; (2) that racecheck case alone and with four
# concurrent sanitizer processes (l35c ran four; l35a ran one and saw 0 hazards); (3) memcheck on linear_w8a8_wgmma
# with the weight scale read by the consumers (no 16-byte chunk copy past the scale array) and on l35c's memcheck
# group 0 (cut short by the w8a8 fault there); parity of linear_w8a8_wgmma; (4) --w8a8-wgmma base (92958ce) / new.
# Binaries: 92958ce + a working-tree linear_w8a8_wgmma.cu whose consumers load the weight scale from global memory one
# block ahead (not kept: 0.92x at Flash wq_b, 1.05-1.07x at Flash wo_b). The logs tarball exceeded the device tool's
# limit (the whole SASS dump was in it) and did not come back; the figures are the call's printed output
# (bench/RESULTS.md session 35).
set -uo pipefail
nvidia-smi -L
N=l35d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
CS=/usr/local/cuda/bin/compute-sanitizer; OBJ=/usr/local/cuda/bin/cuobjdump
$OBJ -sass $G/test_backend_ops > $L/all.sass 2>&1; echo "sass rc=$? t=$(el) $(wc -l < $L/all.sass) lines"
python3 - $L/all.sass $L <<'PY'
import re, sys
txt = open(sys.argv[1]).read().split('\n')
funcs = {}; cur = None
for line in txt:
    m = re.match(r'\s+Function : (\S+)', line)
    if m: cur = m.group(1); funcs[cur] = []; continue
    if cur is not None: funcs[cur].append(line)
want = {'2': [0x3c30, 0x5260, 0x5270, 0x5280, 0x6c30, 0x6cf0, 0x6d00, 0x7890, 0xeb00],
        '3': [0x3d40, 0x5380, 0x5390, 0x53a0, 0x6db0, 0x6e00, 0x6e20, 0x79b0, 0xedb0]}
for name, lines in funcs.items():
    if 'attention_decode_ws_kernel' not in name: continue
    m = re.search(r'attention_decode_ws_kernelILi3ELi([23])EN6__nv_bfloat16ES\d_Lb0E', name)
    if not m: continue
    mode = m.group(1)
    out = open(f'{sys.argv[2]}/ws_3_{mode}.sass', 'w')
    out.write(name + '\n'); out.write('\n'.join(lines)); out.close()
    byoff = {}
    for i, l in enumerate(lines):
        mm = re.search(r'/\*([0-9a-f]{4,})\*/', l)
        if mm: byoff[int(mm.group(1), 16)] = i
    print('==', name[:120], len(lines), 'lines')
    for off in want[mode]:
        if off not in byoff: print('  offset', hex(off), 'not found'); continue
        i = byoff[off]
        print(f'  -- {hex(off)}')
        for l in lines[max(0, i - 14):i + 4]:
            s = l.strip()
            if s.startswith('/*') and s.endswith('*/') and 'Function' not in s: continue
            print('   ', re.sub(r'\s+', ' ', s)[:150])
PY
save
f="attention_decode"
timeout -s KILL 100 $CS --tool racecheck $G/test_backend_ops --filter $f --per-op 1 > $L/race_alone.txt 2>&1
echo "== race alone t=$(el): $(grep -E 'RACECHECK SUMMARY' $L/race_alone.txt)"
for i in 0 1 2 3; do timeout -s KILL 120 $CS --tool racecheck $G/test_backend_ops --filter $f --per-op 1 > $L/race_conc$i.txt 2>&1 & done; wait
for i in 0 1 2 3; do echo "== race concurrent $i t=$(el): $(grep -E 'RACECHECK SUMMARY' $L/race_conc$i.txt)"; done
timeout -s KILL 100 $CS --tool racecheck $G/test_backend_ops --filter attention_decode_fold --per-op 2 > $L/race_fold.txt 2>&1
echo "== race fold alone t=$(el): $(grep -E 'RACECHECK SUMMARY' $L/race_fold.txt) | $(grep -c OK $L/race_fold.txt) OK"
save
timeout -s KILL 120 $CS --tool memcheck --error-exitcode 9 $G/test_backend_ops --filter linear_w8a8_wgmma --per-op 6 > $L/mem_w8a8.txt 2>&1; echo "== memcheck w8a8 rc=$? t=$(el): $(grep -E 'ERROR SUMMARY' $L/mem_w8a8.txt) | $(grep -c ' OK' $L/mem_w8a8.txt) OK $(grep -c FAIL $L/mem_w8a8.txt) FAIL"
timeout -s KILL 180 $CS --tool memcheck --error-exitcode 9 $G/test_backend_ops --filter "$(cat .bin/$N/group0.txt)" --per-op 1 > $L/mem_g0.txt 2>&1; echo "== memcheck group0 rc=$? t=$(el): $(grep -E 'ERROR SUMMARY' $L/mem_g0.txt) | $(grep -c ' OK' $L/mem_g0.txt) OK $(grep -c FAIL $L/mem_g0.txt) FAIL"
save
timeout -s KILL 100 $G/test_backend_ops --filter linear_w8a8_wgmma > $L/par_w8a8.txt 2>&1; echo "== parity w8a8 t=$(el): $(tail -1 $L/par_w8a8.txt)"; grep FAIL $L/par_w8a8.txt | head -3
for r in 1 2; do for b in base new; do
  bin=$G/bench_linear_gemm; [ $b = base ] && bin=$G/bench_linear_gemm_base
  timeout -s KILL 60 $bin --w8a8-wgmma 2 > $L/w8a8_${b}_r$r.txt 2>&1; echo "w8a8 $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; cat $L/w8a8_${b}_r*.txt | grep -E "wgmma" | grep -E "%" | head -40 | cut -c1-160; done
echo "done t=$(el)"
