#!/usr/bin/env bash
# Session 34 lead, call l34g (H200): plan.combine_trigger (the row combine, and the block combine with T * heads <= SMs,
# trigger the step's next kernel first thing): parity x2, test_gpu_model, --chain-early with the next kernel (first /
# exit, and which the plan takes).
set -uo pipefail
nvidia-smi -L
N=l34g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for i in 1 2; do
timeout -s KILL 90 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops$i.txt 2>&1; echo "exit $?" >> $L/ops$i.txt
echo "== ops$i t=$(el): $(grep -c ' OK' $L/ops$i.txt) OK, $(grep -c FAIL $L/ops$i.txt) FAIL; $(tail -2 $L/ops$i.txt | tr '\n' ' ')"; grep FAIL $L/ops$i.txt | head -5 | cut -c1-220; save
done
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep -E "FAIL|gpu-tables-early" $L/gpu_model.txt | head -8 | cut -c1-250; save
C="32,64,hca,1048576,0;8,64,hca,1048576,0;1,64,hca,1048576,0;2,64,hca,131072,0;32,64,hca,131072,0;1,64,csa,1048576,512;32,64,csa,1048576,512;1,64,hca,8192,0;4,128,hca,1048576,0"
timeout -s KILL 150 $G/bench_attention --chain-early --cases "$C" > $L/chain.txt 2>&1; echo "chain exit $? t=$(el)"; save
grep -E "^ *(chain-early|pred (plain|trig), best|with next)|ceiling|max " $L/chain.txt | head -60
grep -E "^  event " $L/chain.txt | awk '{print $2,$3,$5,$(NF-3)}' | paste - - - | head -40
echo "done t=$(el)"
