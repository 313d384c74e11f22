#!/usr/bin/env bash
# Session 30 lead, call l30c (H200): the tree 2657f99 (linear_gemm with its own cuBLAS workspace), binaries built here
# (.bin/l30c): test_gpu_model --only-kv-fp8 3 times first thing on a fresh machine (where session 29's flake
# showed), then the whole test_gpu_model, then scripts/diag/cublas_stream_race (three streams, ten Flash shapes).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l30c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2 3; do
  timeout -s KILL 60 $G/test_gpu_model --only-kv-fp8 > $L/kv_r$r.txt 2>&1; echo "exit $?" >> $L/kv_r$r.txt
  echo "r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_r$r.txt) $(grep 'general kernels: differing' $L/kv_r$r.txt | cut -c40-) $(tail -2 $L/kv_r$r.txt | tr '\n' ' ')"; save
done
timeout -s KILL 200 $G/test_gpu_model > $L/model.txt 2>&1; echo "exit $?" >> $L/model.txt
echo "test_gpu_model t=$(el): $(tail -2 $L/model.txt | tr '\n' ' ')"; grep -E "FAIL" $L/model.txt | head; save
for n in 3 2 8; do timeout -s KILL 60 $G/cublas_stream_race $n 300 >> $L/diag.txt 2>&1; done; cat $L/diag.txt; save
echo "done t=$(el)"
