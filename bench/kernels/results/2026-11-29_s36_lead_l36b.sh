#!/usr/bin/env bash
# Session 36 lead, call l36b (H200). Binaries of lead-s36 (main 9b21edd's kernels; bench_moe_linear with the read ceiling,
# the bytes bound and the batched FP8 ceilings in its W4A8 section).
# 1. bench_moe_linear --prefill-w4a8 (Flash 4096, Pro 4096, Flash 8192, 1024).
# 2. Parity of issue 5's kernels: every case of the ops matching linear.*|grouped_linear|moe_.* (1516 cases, 112 ops)
#    in 16 parallel processes (scripts/gpu_parity_all.sh with OPS).
set -uo pipefail
nvidia-smi -L
N=l36b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 120 $G/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096,8192,1024 --w4a8-pro-t 4096 --w4a8-batched 1 > $L/w4a8.txt 2>&1
echo "== w4a8 rc=$? t=$(el)"; grep -E "hbm read|bytes bound|batched|ceil\)|w4a8_ws \(W4A8\)|W4A16\)" $L/w4a8.txt | cut -c1-200; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear.*|grouped_linear|moe_.*' timeout -s KILL 500 bash scripts/gpu_parity_all.sh 16 470 > $L/parity.txt 2>&1
echo "== parity rc=$? t=$(el)"; cat $L/parity.txt | cut -c1-220 | tail -40
save; echo "done t=$(el)"
