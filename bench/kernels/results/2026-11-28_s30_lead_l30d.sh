#!/usr/bin/env bash
# Session 30 lead, call l30d (H200): the new parity case linear_gemm_streams (linear_gemm through one cuBLAS handle on
# three concurrent streams vs each call alone, bit for bit) on the tree's test_backend_ops and on a variant built with
# linear_gemm's cublasSetWorkspace removed (test_backend_ops_pool: cuBLAS's internal pool, main's behaviour): the case
# must pass on the first and should fail on the second. Then the linear_gemm families on the tree's binary.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l30d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2 3; do
  for b in test_backend_ops test_backend_ops_pool; do
    timeout -s KILL 60 $G/$b --filter linear_gemm_streams > $L/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/${b}_r$r.txt
    echo "r$r $b t=$(el):"; grep -E "linear_gemm_streams|passed" $L/${b}_r$r.txt | cut -c1-220; save
  done
done
timeout -s KILL 120 $G/test_backend_ops --filter linear_gemm,linear_gemm_repacked,linear_gemm_streams,linear_decode,bf16_decode_gemv > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head; save
echo "done t=$(el)"
