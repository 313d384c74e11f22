#!/usr/bin/env bash
# Session 27 lead, call l27c: large BF16 matrices at decode (LM head, BF16 wo_a): GEMV vs linear_decode vs cuBLAS.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l27c/l27c.tar.xz $G
cat $G/commit.txt
for r in 1 2; do timeout 120 $G/bench_linear_gemm --bf16-large > $OUT/bf16_large_r$r.txt 2>&1; echo "rc=$?"; cat $OUT/bf16_large_r$r.txt | sed -E 's/ +/ /g'; done
