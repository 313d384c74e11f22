#!/usr/bin/env bash
# Session 32 lead, call l32e (H200): the final tree of the 3-D key box (commit 1b97830, TMA from 8
# tiles per split): parity of the attention families, test_gpu_model (whole and --only-kv-fp8),
# --steps on the cases the threshold moves, --kv-fp8-ab and --prefill base / new alternating
# (2 rounds; base = main 86a3dbc).
set -uo pipefail
nvidia-smi -L
N=l32e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
S="32,64,hca,1048576,0;32,64,hca,131072,0;16,64,hca,131072,0"
timeout -s KILL 200 $G/bench_attention --steps --cases "$S" > $L/steps_new.txt 2>&1; echo "steps exit $? t=$(el)"; save
grep "^  plan \|variants" $L/steps_new.txt | cut -c1-240
C="64,128,hca,1048576,0;16,64,hca,131072,0;32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0;32,64,hca,131072,0;32,64,csa,1048576,512;32,128,csa,1048576,1024;1,64,hca,1048576,0;1,64,hca,8192,0;8,64,hca,8192,0;1,64,csa,1048576,512;4,64,csa,1048576,512"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan\|records plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
P="4096,64,hca,131072,0;4096,128,hca,131072,0;1024,64,csas,1048576,512"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --prefill --prefill-chunks 4096 --prefill-cases "$P" > $L/prefill_${b}_r$r.txt 2>&1; echo "prefill $b r$r exit $? t=$(el)"; save
done; done
for f in $L/prefill_*.txt; do echo "$(basename $f):"; grep "<- rule" $f | cut -c1-150; done
for r in 1 2; do timeout -s KILL 60 $G/test_gpu_model --only-kv-fp8 > $L/kv_r$r.txt 2>&1; echo "exit $?" >> $L/kv_r$r.txt; echo "kv r$r: $(tail -2 $L/kv_r$r.txt | tr '\n' ' ')"; done; save
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
echo "done t=$(el)"
