#!/usr/bin/env bash
# Session 38 lead, call l38i (H200): test_gpu_model on the final tree (W2P from T = 5).
set -uo pipefail
nvidia-smi -L
N=l38i
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model: $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
tar czf $OUT/${N}_logs.tgz -C $L .
