#!/usr/bin/env bash
# Session 31 lead, call l31n (H200): scripts/diag/attn_consumer_split RING 7 (the engine's producer protocol and index
# work with its cp.async.mbarrier.arrive.noinc arrivals) against RING 3-6, rows from HBM only, 65 and 512 tiles.
set -uo pipefail
nvidia-smi -L
N=l31n
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
for n in 65 512; do
  timeout -s KILL 100 $G/attn_consumer_split $n "2 WGs rows HBM" > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"
  grep "^2 WGs" $OUT/${N}_split_n$n.txt | sed 's/cycles per tile.*tile every/every/' | cut -c1-90
done
