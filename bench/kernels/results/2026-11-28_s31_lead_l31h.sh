#!/usr/bin/env bash
# Session 31 lead, call l31h (H200): scripts/diag/attn_consumer_split with rows: each tile brought into its stage by
# 8 bulk copies (TMA engine) from an L2-resident pool or from a 276 MB pool (HBM), beside the consumers; the diag on
# the engine's softmax helpers (wg_offset / exp2_ftz / pack_probs) re-run.
set -uo pipefail
nvidia-smi -L
N=l31h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 512 64; do
  timeout -s KILL 90 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"; cut -c1-175 $OUT/${N}_split_n$n.txt | grep -v "^    tile"
done
grep "^    tile 1[0-5]" $OUT/${N}_split_n512.txt
