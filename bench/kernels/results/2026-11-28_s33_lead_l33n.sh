#!/usr/bin/env bash
# Session 33 lead, call l33n (H200): the row combine on bf16 rows fmas straight from its early loads (the 16-split
# instance took 255 registers and a 216-byte stack in a9d6374): resource usage, parity, test_gpu_model, --kv-fp8-ab
# base (a9d6374) / new at the row-combine shapes.
set -uo pipefail
nvidia-smi -L
N=l33n
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
cuobjdump --dump-resource-usage $G/test_backend_ops 2>&1 | grep -A1 "attention_decode_combine" | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*" | paste - - - | sed "s/_ZN4dsv44cuda[^ ]*attention_decode_combine/combine/" | cut -c1-120 | sort -u
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
C="12,64,hca,1048576,0;16,64,hca,1048576,0;32,64,hca,1048576,0;4,64,csa,1048576,512;8,64,csa,1048576,512;1,64,hca,8192,0;32,128,hca,1048576,0;32,64,csa,1048576,512;6,128,hca,1048576,0"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan\|records plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
echo "done t=$(el)"
