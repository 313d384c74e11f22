#!/usr/bin/env bash
# Session 34 lead, call l34c (H200; l34b had the mode-4 partial stores doubled by a dangling else): plan.merge_peers (the split CTAs of a (token, head group) merge their bf16
# partials themselves after a per-group arrival counter; no combine launch; on by default where the grid is one
# wave): parity x3 (peer merge vs combine bit for bit in every split case), test_gpu_model, --chain-early (off /
# early / merge behind a plain and a triggering query writer, event rows), --kv-fp8-ab base (l34a's binary:
# 34604f3, the combine) / new on the engine's plans, bf16 pools and FP8 records.
set -uo pipefail
nvidia-smi -L
N=l34c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for i in 1 2 3; do
timeout -s KILL 90 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops$i.txt 2>&1; echo "exit $?" >> $L/ops$i.txt
echo "== ops$i t=$(el): $(grep -c ' OK' $L/ops$i.txt) OK, $(grep -c FAIL $L/ops$i.txt) FAIL, $(grep -c 'peers)' $L/ops$i.txt) peers; $(tail -2 $L/ops$i.txt | tr '\n' ' ')"; grep FAIL $L/ops$i.txt | head -5 | cut -c1-220; save
done
timeout -s KILL 120 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
C="32,64,hca,1048576,0;8,64,hca,1048576,0;1,64,hca,1048576,0;2,64,hca,131072,0;32,64,hca,131072,0;1,64,csa,1048576,512;32,64,csa,1048576,512;1,128,csa,1048576,1024;4,128,hca,1048576,0"
timeout -s KILL 150 $G/bench_attention --chain-early --cases "$C" > $L/chain.txt 2>&1; echo "chain exit $? t=$(el)"; save
grep -E "^ *(chain-early|pred (plain|trig), best)|ceiling|max " $L/chain.txt | head -60
grep -E "^  event " $L/chain.txt | awk '{print $1,$2,$3,$5,$(NF-3)}' | paste - - - | head -40
C2="1,64,csa,1048576,512;1,128,csa,1048576,1024;1,64,hca,131072,0;2,64,hca,131072,0;4,64,hca,131072,0;8,64,hca,1048576,0;4,128,hca,1048576,0;2,64,hca,1048576,0;16,64,hca,1048576,0;32,64,hca,1048576,0;4,64,csa,1048576,512;32,64,csa,1048576,512;1,64,hca,8192,0;12,64,hca,1048576,0"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 60 $bin --kv-fp8-ab --cases "$C2" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan\|records plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
echo "done t=$(el)"
which cuobjdump >/dev/null && cuobjdump -res-usage $G/bench_attention 2>/dev/null | grep -A1 "attention_decode_ws_kernelILi3ELi[45]E" | grep -o "REG:[0-9]* STACK:[0-9]*" | sort | uniq -c
