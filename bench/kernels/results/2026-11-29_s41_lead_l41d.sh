#!/usr/bin/env bash
# Session 41, call l41d (H200), the tree of l41c (15c599f): the moe_decode* parity cases that l41c's shards did not reach
# (killed at its 240 s limit; its OK lines skip the rest), then test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l41d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
P=/tmp/l41c_prev; rm -rf $P; mkdir -p $P; tar xzf bench/kernels/results/h200_2026-11-29_s41_l41c_logs.tgz -C $P
SKIP="$(ls $P/parity/pass1/* $P/parity/pass2/* | tr '\n' ' ')" OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 250 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; head -3 $L/parity_run.txt; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
timeout -s KILL 170 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
