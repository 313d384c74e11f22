#!/usr/bin/env bash
# Session 31 lead, call l31a (H200): scripts/diag/attn_consumer_split (the decode attention's consumer loop alone with
# 2 or 3 consumer warpgroups; P V channels 256 / 256 or 192 / 192 / 128) and, for the real kernel's consumers-alone
# bound in the same call, main's bench_attention --alt-rows at HCA 1M T=32. SASS census of the diag's kernels first.
set -uo pipefail
nvidia-smi -L
N=l31a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
cuobjdump -sass $G/attn_consumer_split > $OUT/${N}_sass.txt 2>&1
awk '/Function :/{name=$3} /HGMMA/{h[name]++} /WARPGROUP.DEPBAR/{d[name]++} /WARPGROUP.ARRIVE/{a[name]++} END{for(n in h) print n, "HGMMA", h[n], "DEPBAR", d[n], "ARRIVE", a[n]}' $OUT/${N}_sass.txt
for n in 512 128; do
  timeout -s KILL 60 $G/attn_consumer_split $n > $OUT/${N}_split_n$n.txt 2>&1; echo "exit $? t=$(el)"; cat $OUT/${N}_split_n$n.txt
done
timeout -s KILL 240 $G/bench_attention --alt-rows --no-ceilings --cases "32,64,hca,1048576,0" > $OUT/${N}_altrows.txt 2>&1; echo "exit $? t=$(el)"
cut -c1-220 $OUT/${N}_altrows.txt | tail -30
xz -9 $OUT/${N}_sass.txt
