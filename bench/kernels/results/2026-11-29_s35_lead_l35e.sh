#!/usr/bin/env bash
# Session 35 lead, call l35e (H200): (1) racecheck of the ws attention kernels: attention_decode_fold's first cases
# twice (l35d: 48 hazards), attention_decode's first 40 cases (bf16-activation ws kernels included), attention_decode_fp8
# and a cuBLAS-only family for reference; (2) memcheck and parity of linear_w8a8_wgmma with main's kernel and the
# harness's scale buffers padded as the engine's allocator pads them (binary: 92958ce + this session's tree).
set -uo pipefail
nvidia-smi -L
N=l35e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
CS=/usr/local/cuda/bin/compute-sanitizer
summ() { echo "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $1 | tail -1) | $(grep -c ' OK' $1) OK $(grep -c FAIL $1) FAIL"; }
timeout -s KILL 80 $CS --tool memcheck --error-exitcode 9 $G/test_backend_ops --filter linear_w8a8_wgmma --per-op 8 > $L/mem_w8a8.txt 2>&1; echo "== memcheck w8a8 rc=$? t=$(el): $(summ $L/mem_w8a8.txt)"
for r in 1 2; do timeout -s KILL 80 $CS --tool racecheck --print-limit 20 $G/test_backend_ops --filter attention_decode_fold --per-op 2 > $L/race_fold_r$r.txt 2>&1; echo "== race fold r$r t=$(el): $(summ $L/race_fold_r$r.txt)"; done; save
grep -E "^  attention|Race reported|access at" $L/race_fold_r1.txt | sed -E 's/void dsv4::cuda::<unnamed>::attention_decode_ws_kernel<\(int\)([0-9]), \(int\)([0-9]), ([a-z_0-9]+), ([a-z_0-9]+), \(bool\)([01])>[^+]*\+/ws<\1,\2,\3,\4,\5>+/' | cut -c1-160 | head -30
timeout -s KILL 150 $CS --tool racecheck --print-limit 40 $G/test_backend_ops --filter attention_decode --per-op 40 > $L/race_dec.txt 2>&1; echo "== race attention_decode x40 t=$(el): $(summ $L/race_dec.txt)"; save
grep -E "Race reported" -A1 $L/race_dec.txt | sed -E 's/void dsv4::cuda::<unnamed>::attention_decode_ws_kernel<\(int\)([0-9]), \(int\)([0-9]), ([a-z_0-9]+), ([a-z_0-9]+), \(bool\)([01])>[^+]*\+/ws<\1,\2,\3,\4,\5>+/' | cut -c1-160 | sort | uniq -c | head -20
grep -B2 "Race reported" $L/race_dec.txt | grep -E "^  attention" | head -5
timeout -s KILL 60 $CS --tool racecheck --print-limit 10 $G/test_backend_ops --filter attention_decode_fp8 --per-op 6 > $L/race_fp8.txt 2>&1; echo "== race attention_decode_fp8 x6 t=$(el): $(summ $L/race_fp8.txt)"; save
timeout -s KILL 100 $G/test_backend_ops --filter linear_w8a8_wgmma,attention_decode_fold > $L/par.txt 2>&1; echo "== parity t=$(el): $(tail -1 $L/par.txt)"; grep FAIL $L/par.txt | head -3; save
echo "done t=$(el)"
