#!/usr/bin/env bash
# Session 31 lead, call l31l (H200): scripts/diag/attn_consumer_split with the engine's key-tile copies (RING 6: 8 boxes of a 2D
# tensor map per tile, SWIZZLE_128B, from a row-major 276 MB pool) against 1D bulk copies of pre-swizzled tiles (RING 3),
# at 65 and 512 tiles per CTA.
set -uo pipefail
nvidia-smi -L
N=l31l
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 65 512; do
  timeout -s KILL 100 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"
  grep -A1 "rows from HBM" $OUT/${N}_split_n$n.txt | grep -v "^--" | cut -c1-50,120-210
done
