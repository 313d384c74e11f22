#!/usr/bin/env bash
# Session 33 lead, call l33c (H200): plan rules for 33-64 splits: TMA-length splits for Flash HCA 1M T=3 (44x6 -> 33x8) and
# bf16 partial rows up to 64 splits with two rows of work or more (Flash T=2/3/4, Pro T=1/2 at 1M):
# parity of the attention families, --steps on the changed shapes (plan / f32 part rows, split
# rows), --kv-fp8-ab base (main 573ad56) / new alternating, test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l33c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
S="2,64,hca,1048576,0;3,64,hca,1048576,0;4,64,hca,1048576,0;1,128,hca,1048576,0;2,128,hca,1048576,0"
timeout -s KILL 240 $G/bench_attention --steps --cases "$S" > $L/steps_new.txt 2>&1; echo "steps exit $? t=$(el)"; save
grep "^  plan \|f32 part S\|^  split\|chain - pred" $L/steps_new.txt | cut -c1-300
C="2,64,hca,1048576,0;3,64,hca,1048576,0;4,64,hca,1048576,0;1,128,hca,1048576,0;2,128,hca,1048576,0;1,64,hca,1048576,0;8,64,hca,1048576,0;32,64,hca,1048576,0;1,64,hca,131072,0;3,64,hca,524288,0"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan\|records plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
echo "done t=$(el)"
