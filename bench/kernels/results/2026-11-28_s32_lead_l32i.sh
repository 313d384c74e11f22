#!/usr/bin/env bash
# Session 32 lead, call l32i (H200): --steps split rows of small steps on the final tree's kernels
# (a baseline for the plan's next split rules; two passes for repeatability).
set -uo pipefail
nvidia-smi -L
N=l32i
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
C="1,64,hca,131072,0;1,64,hca,8192,0;1,64,csa,1048576,512;1,128,csa,1048576,1024;4,64,hca,1048576,0;4,64,csa,1048576,512;8,64,csa,1048576,512;16,64,hca,131072,0"
for r in 1 2; do
  timeout -s KILL 200 $G/bench_attention --steps --cases "$C" > $OUT/${N}_steps_r$r.txt 2>&1; echo "steps r$r exit $?"
done
grep -hE "^  (plan|split) " $OUT/${N}_steps_r*.txt | grep -v "graph\|r2" | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort -k3,3 -k4,4
