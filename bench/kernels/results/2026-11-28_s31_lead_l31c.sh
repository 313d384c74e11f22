#!/usr/bin/env bash
# Session 31 lead, call l31c (H200): scripts/diag/attn_consumer_split with clock64 stamps at the points of session 29's
# l29e (the engine kernel's consumers-alone stamps), and the SASS of main's alternate-tile ws kernels (bf16 pools)
# for an instruction-level comparison here.
set -uo pipefail
nvidia-smi -L
N=l31c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 60 $G/attn_consumer_split 64 > $OUT/${N}_split_n64.txt 2>&1; echo "exit $?"; cut -c1-200 $OUT/${N}_split_n64.txt
cuobjdump -sass $G/attn_consumer_split > $OUT/${N}_diag_sass.txt 2>&1
cuobjdump -sass $G/bench_attention 2>/dev/null | awk '/Function :/{keep = ($3 ~ /attention_decode_ws_kernelILi3E/ && $3 ~ /Lb0EEEv/)} keep' > $OUT/${N}_ws_sass.txt
grep "Function :" $OUT/${N}_ws_sass.txt | cut -c1-200
xz -9 $OUT/${N}_diag_sass.txt $OUT/${N}_ws_sass.txt
ls -la $OUT
