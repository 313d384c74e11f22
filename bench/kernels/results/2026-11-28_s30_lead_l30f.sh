#!/usr/bin/env bash
# Session 30 lead, call l30f (H200): the tree 7b998a8 (one cuBLAS workspace per stream, kept), binaries built here:
# test_gpu_model --only-kv-fp8 twice first thing, the whole test_gpu_model (reserved memory per fixture against l29m /
# l30c), the linear families' parity.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l30f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do
  timeout -s KILL 60 $G/test_gpu_model --only-kv-fp8 > $L/kv_r$r.txt 2>&1; echo "exit $?" >> $L/kv_r$r.txt
  echo "r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_r$r.txt) $(tail -2 $L/kv_r$r.txt | tr '\n' ' ')"; save
done
timeout -s KILL 200 $G/test_gpu_model > $L/model.txt 2>&1; echo "exit $?" >> $L/model.txt
echo "test_gpu_model t=$(el): $(tail -2 $L/model.txt | tr '\n' ' ')"; grep -E "FAIL" $L/model.txt | head; grep -o "reserved device memory[^)]*" $L/model.txt; save
timeout -s KILL 150 $G/test_backend_ops --filter linear_gemm,linear_gemm_repacked,linear_gemm_streams,linear_decode,bf16_decode_gemv > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head; save
echo "done t=$(el)"
