#!/usr/bin/env bash
# Session 36 lead, call l36f (H200): why cuBLASLt ran no 128-block-scaled batched FP8 GEMM in l36a / l36b: the W4A8
# section at Flash T = 4096 with bench_moe_linear printing each step's status of that probe and the same problem for
# one expert (batch count 1).
set -uo pipefail
nvidia-smi -L
N=l36f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 120 $G/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $L/w4a8.txt 2>&1
echo "== w4a8 rc=$? t=$(el)"; grep -E "block-scaled|batched|bytes bound|w4a8_ws \(W4A8\)" $L/w4a8.txt | cut -c1-250
save; echo "done t=$(el)"
