#!/usr/bin/env bash
# Session 31 lead, call l31k (H200): scripts/diag/attn_consumer_split with the engine's producer protocol for TMA tiles
# (all 128 producer threads wait for each stage and arrive on full; RING 5 adds per-lane index loads three tiles
# ahead and a ballot) against one producer lane (RING 3), at 65 and 512 tiles per CTA.
set -uo pipefail
nvidia-smi -L
N=l31k
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 65 512; do
  timeout -s KILL 100 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"
  grep -A1 "rows from HBM" $OUT/${N}_split_n$n.txt | grep -v "^--" | cut -c1-50,120-210
done
