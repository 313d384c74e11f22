#!/usr/bin/env bash
# Session 32 lead, call l32j (H200): the 3-D key box's L2 promotion (256 B, the default / 128 B /
# none) as --steps variants (an A/B build of 5ac527d, plan.diag 256 / 512; not committed).
set -uo pipefail
nvidia-smi -L
N=l32j
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
timeout -s KILL 200 $G/bench_attention_promo --steps --cases "32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0" > $OUT/${N}_steps.txt 2>&1; echo "steps exit $?"
grep "variants\|ring v tma\|max |out" $OUT/${N}_steps.txt | grep -v trace | cut -c1-250
