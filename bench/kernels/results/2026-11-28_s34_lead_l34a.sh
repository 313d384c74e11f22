#!/usr/bin/env bash
# Session 34 lead, call l34a (H200): plan.tables_early (the ws decode kernel reads its key space and first tiles'
# indices before griddepcontrol.wait; the engine's step tables are host uploads): parity (incl. the new pdl-early
# cases), test_gpu_model (the engine sets it), bench_attention --chain-early (off / on behind a plain and a
# triggering query writer in a graph, and event-timed), and --kv-fp8-ab base (main a9d6374's kernels) / new on
# the plan as made (tables_early off: the relocated index loads of the path without it).
set -uo pipefail
nvidia-smi -L
N=l34a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
C="32,64,hca,1048576,0;8,64,hca,1048576,0;1,64,hca,1048576,0;2,64,hca,131072,0;32,64,hca,131072,0;1,64,csa,1048576,512;32,64,csa,1048576,512;1,128,csa,1048576,1024;4,128,hca,1048576,0"
timeout -s KILL 200 $G/bench_attention --chain-early --cases "$C" > $L/chain.txt 2>&1; echo "chain exit $? t=$(el)"; save
grep -E "^ *(chain-early|pred (plain|trig): off)|case|ceiling" $L/chain.txt | head -60
grep -E "event plan" $L/chain.txt | awk '{print $1,$2,$3,$4,$(NF-3)}' | head -40
C2="32,64,hca,1048576,0;1,64,hca,1048576,0;1,64,csa,1048576,512;32,64,csa,1048576,512"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --kv-fp8-ab --cases "$C2" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
echo "done t=$(el)"
