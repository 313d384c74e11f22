#!/usr/bin/env bash
# Session 31 lead, call l31r (H200): as l31q with the bench bug fixed (l31q stamped after freeing the plan's scratch): clock64 stamps per
# step of the engine's alternate-tile loop (an A/B build, plan.diag 1024, not committed; HCA 1M T=32, with rows and
# consumers alone) and of the diag's loop (rows from HBM by 1D bulk copies, 65 tiles per CTA) on the same machine.
set -uo pipefail
nvidia-smi -L
N=l31r
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
timeout -s KILL 200 $G/bench_attention --alt-rows --no-ceilings --cases "32,64,hca,1048576,0" > $OUT/${N}_engine.txt 2>&1; echo "engine exit $?"
grep -A25 "stamps (" $OUT/${N}_engine.txt | cut -c1-170 | sed -n "1,60p"
timeout -s KILL 100 $G/attn_consumer_split 65 "2 WGs rows HBM" > $OUT/${N}_diag.txt 2>&1; echo "diag exit $?"
sed -n '/stamped runs/,$p' $OUT/${N}_diag.txt | grep -v "^2 WGs ring" | cut -c1-170 | head -30
