#!/usr/bin/env bash
# Session 31 lead, call l31o (H200): is the engine's producer work the per-tile gap? An A/B build whose plan.diag 512
# lets producer warps 1-3 skip the per-lane index loads and row references on tiles of TMA parts (timing only; valid
# where every such tile is full, as in these cases); bench_attention --alt-rows at HCA 1M T=32 / T=16 / T=8.
set -uo pipefail
nvidia-smi -L
N=l31o
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 250 $G/bench_attention --alt-rows --no-ceilings --cases "32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0" > $OUT/${N}_alt.txt 2>&1; echo "exit $?"
grep -v "in-turn" $OUT/${N}_alt.txt | cut -c1-130
