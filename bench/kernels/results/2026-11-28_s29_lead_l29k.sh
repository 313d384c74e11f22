#!/usr/bin/env bash
# Session 29 lead, call l29k (H200): the owner issues S of tile k + 2 after the partner issued its P V of tile k (k_ws_opt_pv_first):
# parity of the attention families, test_gpu_model --only-kv-fp8 base / new alternating (4 rounds), the full
# test_gpu_model, then bench_attention --kv-fp8-ab base / new alternating (2 rounds). --only-kv-fp8: new first.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29k
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
for r in 1 2 3; do for b in new base; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout -s KILL 100 $bin --only-kv-fp8 > $L/kv_${b}_r$r.txt 2>&1; echo "exit $?" >> $L/kv_${b}_r$r.txt
  echo "$b r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_${b}_r$r.txt) $(tail -2 $L/kv_${b}_r$r.txt | tr '\n' ' ')"; save
done; done
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
C="32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0;32,64,hca,131072,0;32,64,csa,1048576,512;32,128,csa,1048576,1024;1,64,hca,1048576,0"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 150 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
echo "done t=$(el)"
