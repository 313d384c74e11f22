#!/usr/bin/env bash
# Session 29 lead, call l29e (H200): the ws alternate-tile loop's clock64 stamps per tile (plan.diag 256, CTA 0) with
# rows and with the consumers alone, HCA 1M T=32 and T=8 (where the ~2000 cycles per 32-key tile go).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 200 $G/bench_attention --alt-stamps --no-ceilings --cases "32,64,hca,1048576,0;8,64,hca,1048576,0" > $OUT/${N}_stamps.txt 2>&1; echo "exit $?"
cut -c1-200 $OUT/${N}_stamps.txt
