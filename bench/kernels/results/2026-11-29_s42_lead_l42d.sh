#!/usr/bin/env bash
# Session 42, call l42d (H200): test_gpu_model (the engine's forward on the GPU against the CPU backend) on 2869d75, the
# tree that landed the partial sums in the ring and W1/W3's 4 scale slots at T = 1 (l42c: moe_decode* parity 373/373).
set -uo pipefail
nvidia-smi -L
N=l42d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
