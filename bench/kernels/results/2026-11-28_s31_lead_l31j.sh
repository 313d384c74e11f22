#!/usr/bin/env bash
# Session 31 lead, call l31j (H200): per-tile loop time in us on one machine: scripts/diag/attn_consumer_split (rows by
# 1-lane bulk copies, globaltimer around the loop) at 65 / 512 tiles per CTA, and the engine's plan traced
# (bench_attention --steps: per-CTA tile0 / loop-end stamps) at HCA 1M T=32 and T=8.
set -uo pipefail
nvidia-smi -L
N=l31j
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 65 512; do
  timeout -s KILL 100 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"
  sed -n '/pass 2/,/stamped/p' $OUT/${N}_split_n$n.txt | grep -v "^    tile" | cut -c1-60,100-175
done
timeout -s KILL 200 $G/bench_attention --steps --cases "32,64,hca,1048576,0;8,64,hca,1048576,0" > $OUT/${N}_steps.txt 2>&1; echo "steps exit $?"
grep -B1 -A2 "trace plan\|  plan " $OUT/${N}_steps.txt | cut -c1-260 | head -40
