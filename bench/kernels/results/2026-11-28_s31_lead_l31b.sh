#!/usr/bin/env bash
# Session 31 lead, call l31b (H200): scripts/diag/attn_consumer_split with the engine's stage protocol (RING: full /
# empty mbarriers, mask word, per-warp releases, a producer warpgroup publishing empty stages) and the pipe rows
# with S kept live.
set -uo pipefail
nvidia-smi -L
N=l31b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
cuobjdump -sass $G/attn_consumer_split > $OUT/${N}_sass.txt 2>&1
awk '/Function :/{name=$3} /HGMMA/{h[name]++} /WARPGROUP.DEPBAR/{d[name]++} END{for(n in h) print n, "HGMMA", h[n], "DEPBAR", d[n]}' $OUT/${N}_sass.txt
for n in 512 64; do
  timeout -s KILL 60 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $?"; cut -c1-150 $OUT/${N}_split_n$n.txt
done
xz -9 $OUT/${N}_sass.txt
