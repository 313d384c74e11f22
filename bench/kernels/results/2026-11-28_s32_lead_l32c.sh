#!/usr/bin/env bash
# Session 32 lead, call l32c (H200): TMA key tiles as one 3-D box per tile (plan.diag 128, bench
# variant "v tma3d") against 8 2-D boxes ("v tma") and cp.async ("v ldgsts"), --steps, two cases.
set -uo pipefail
nvidia-smi -L
N=l32c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
timeout -s KILL 150 $G/bench_attention --steps --cases "32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0" > $OUT/${N}_steps.txt 2>&1; echo "steps exit $? t=$(el)"
grep "v tma\|v ldgsts\|variants" $OUT/${N}_steps.txt | grep -v "graph r" | cut -c1-240
echo "done t=$(el)"
