#!/usr/bin/env bash
# Session 29 lead, call l29c (H200): seesaw v2 (the next block's S halves issued beside the partner block's P V, wait<1>),
# parity of the attention_decode family, then --seesaw-ab with the L2-prefetch variant (plan.diag 128) and stamps.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode > $OUT/${N}_ops.txt 2>&1; echo "ops exit $?"
echo "$(grep -c ' OK' $OUT/${N}_ops.txt) OK, $(grep -c FAIL $OUT/${N}_ops.txt) FAIL; $(tail -1 $OUT/${N}_ops.txt)"; grep FAIL $OUT/${N}_ops.txt | head -5 | cut -c1-200
grep seesaw $OUT/${N}_ops.txt | awk '{print $NF, $(NF-1), $(NF-2), $(NF-3)}' | head -30
timeout -s KILL 300 $G/bench_attention --seesaw-ab --cases "32,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0;32,64,csa,1048576,512" > $OUT/${N}_seesaw.txt 2>&1; echo "exit $?"
grep -vE "^\s+trace|^\s+ entry|graph r|pair [4-7]" $OUT/${N}_seesaw.txt | cut -c1-200
