#!/usr/bin/env bash
# Session 36 lead, call l36g (H200): the W4A8 section at every shape with the 128-block-scaled FP8 GEMM timed as a
# loop of one cuBLASLt launch per expert and GEMM where the batched form is not supported (l36f: status 15), beside
# the per-tensor batched ceiling.
set -uo pipefail
nvidia-smi -L
N=l36g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096,8192,1024 --w4a8-pro-t 4096 > $L/w4a8.txt 2>&1
echo "== w4a8 rc=$? t=$(el)"; grep -E "block-scaled|batched|blk|bytes bound|w4a8_ws \(W4A8\)" $L/w4a8.txt | cut -c1-250
save; echo "done t=$(el)"
