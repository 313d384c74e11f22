#!/usr/bin/env bash
# Session 33 lead, call l33b (H200): main 573ad56's bench_attention --steps at the decode shapes
# whose plan fills every SM with split CTAs (T * groups * splits = 132: Flash HCA 1M T = 3 / 4 / 6,
# Pro T = 2) and T = 2 / 8 (fewer), for the split rows: is a plan that leaves SMs free faster?
set -uo pipefail
nvidia-smi -L
N=l33b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do
timeout -s KILL 200 $G/bench_attention --steps --cases "3,64,hca,1048576,0;4,64,hca,1048576,0;6,64,hca,1048576,0;2,128,hca,1048576,0;12,64,hca,1048576,0" > $L/steps_r$r.txt 2>&1; echo "steps r$r exit $? t=$(el)"; save
grep "^  plan S\|^  split\|combine entry" $L/steps_r$r.txt | grep -v "graph\| r2 " | cut -c1-110
done
echo "done t=$(el)"
