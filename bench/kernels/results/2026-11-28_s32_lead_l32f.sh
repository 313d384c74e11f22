#!/usr/bin/env bash
# Session 32 lead, call l32f (H200): 1b97830's --steps split rows at T = 1 (does TMA from 8 tiles per
# split change the best split count of single-token steps?).
set -uo pipefail
nvidia-smi -L
N=l32f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
timeout -s KILL 200 $G/bench_attention --steps --cases "1,64,hca,1048576,0;1,128,hca,1048576,0;1,64,hca,131072,0;2,64,hca,1048576,0;4,64,hca,1048576,0" > $OUT/${N}_steps.txt 2>&1; echo "steps exit $? t=$(el)"
grep -E "^  (plan|split|waves) |chain - pred" $OUT/${N}_steps.txt | grep -v graph | cut -c1-110
echo "done t=$(el)"
