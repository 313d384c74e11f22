#!/usr/bin/env bash
# Session 33 lead, call l33g (H200): f6bf369's --steps split rows at the remaining decode shapes (Flash CSA T=16 / 32,
# HCA 8K T=2-32, HCA 128K T=16 / 32, Pro CSA T=8-32, Pro HCA 128K T=4-16): does any
# split count beat the plan's?
set -uo pipefail
nvidia-smi -L
N=l33g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
S="16,64,csa,1048576,512;32,64,csa,1048576,512;2,64,hca,8192,0;8,64,hca,8192,0;32,64,hca,8192,0;16,64,hca,131072,0;32,64,hca,131072,0;8,128,csa,1048576,1024;16,128,csa,1048576,1024;32,128,csa,1048576,1024;4,128,hca,131072,0;16,128,hca,131072,0"
for r in 1 2; do
timeout -s KILL 250 $G/bench_attention --steps --cases "$S" > $L/steps_r$r.txt 2>&1; echo "steps r$r exit $? t=$(el)"; save
done
for r in 1 2; do grep -h "^  plan S\|^  split" $L/steps_r$r.txt | grep -v "graph\| r2 " | awk '{print $1, $2, $4, $5, $6, $7, $(NF-3)}'; done | sort | awk '{k=$1" "$2" "$3" "$4" "$5" "$6; v[k]=v[k]" "$7} END{for(k in v) print k":"v[k]}' | sort -t'=' -k2
echo "done t=$(el)"
