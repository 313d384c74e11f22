#!/usr/bin/env bash
# Session 36 lead, call l36c (H200): the 230 cases of issue 5's ops (linear.*|grouped_linear|moe_.*) that l36b's
# 470 s limit left, dealt round-robin into 16 --cases shards (scripts/gpu_parity_all.sh BY=cases, SKIP = l36b's logs,
# carried in .bin/l36c/skip). test_backend_ops of lead-s36 (main's kernels + the harness's --cases / --list-cases).
set -uo pipefail
nvidia-smi -L
N=l36c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear.*|grouped_linear|moe_.*' BY=cases SKIP=".bin/$N/skip/*.txt" \
  timeout -s KILL 540 bash scripts/gpu_parity_all.sh 16 520 > $L/parity.txt 2>&1
echo "== parity rc=$? t=$(el)"; grep -vE "Killed" $L/parity.txt | cut -c1-220 | tail -24
cat $L/parity/*.txt | grep -cE " OK$"; cat $L/parity/*.txt | grep -E "FAIL" | head
save; echo "done t=$(el)"
