#!/usr/bin/env bash
# Session 29 lead, call l29b (H200): the seesaw kernel's per-pair clock64 stamps (plan.diag 64, CTA 0) with rows and
# with the consumers alone, at HCA 1M T=32 and T=8, beside the ws plan (bench_attention --seesaw-ab).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 200 $G/bench_attention --seesaw-ab --cases "32,64,hca,1048576,0;8,64,hca,1048576,0" > $OUT/${N}_seesaw.txt 2>&1; echo "exit $?"
grep -vE "^\s+trace|^\s+ entry|graph r" $OUT/${N}_seesaw.txt | cut -c1-200
