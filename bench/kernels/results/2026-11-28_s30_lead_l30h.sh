#!/usr/bin/env bash
# Session 30 lead, call l30h (H200): the review's rewrites checked: linear_gemm_streams with its data from the harness's
# own helpers (rng, encode_random, device_stack, act_host) on the tree's test_backend_ops and on the variant with
# cuBLAS's internal pool (must pass / should fail), and the two diags on bench_common.cuh (still run, same findings).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l30h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
for r in 1 2; do
  for b in test_backend_ops test_backend_ops_pool; do
    echo "r$r $b t=$(el):"; timeout -s KILL 60 $G/$b --filter linear_gemm_streams 2>&1 | grep -E "linear_gemm_streams|passed" | cut -c1-220
  done
done
timeout -s KILL 60 $G/cublas_stream_race 3 300
timeout -s KILL 60 $G/cublas_workspace_speed
echo "done t=$(el)"
