#!/usr/bin/env bash
# Session 31 lead, call l31i (H200): scripts/diag/attn_consumer_split with rows and the read ceiling in the same
# process, at 65 tiles per CTA (the engine's split at HCA 1M T=32), 512 and 2048.
set -uo pipefail
nvidia-smi -L
N=l31i
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 65 512 2048; do
  timeout -s KILL 150 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"
  grep -v "^    tile" $OUT/${N}_split_n$n.txt | grep -v "^pass 1" | sed -n '/pass 2/,$p' | cut -c1-110; grep "ceiling" $OUT/${N}_split_n$n.txt | head -1
done
