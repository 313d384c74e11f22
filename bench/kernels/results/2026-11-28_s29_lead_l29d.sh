#!/usr/bin/env bash
# Session 29 lead, call l29d (H200): bench_attention --steps on the short decode steps (Flash CSA T=8 / 32, HCA 128K
# T=8 / 32, Pro CSA T=32): the plan's split against other splits on this GPU (the split rules were measured on an H100).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 400 $G/bench_attention --steps --cases "32,64,csa,1048576,512;8,64,csa,1048576,512;32,64,hca,131072,0;8,64,hca,131072,0;32,128,csa,1048576,1024" > $OUT/${N}_steps.txt 2>&1; echo "exit $?"
grep -E "^  (plan|split|waves|before)|graph|HBM" $OUT/${N}_steps.txt | grep -v "r2\|chain" | cut -c1-150
