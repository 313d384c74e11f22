#!/bin/bash
# MOE7 run 3: parity with the new defaults (shift expansion + wave-model RT), all four decode
# families (first 20 cases each) and the tuning cases; A/B old defaults (r4) vs new (s0).
set -o pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe7/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== parity"
timeout 100 $B/test_backend_ops --filter moe_decode,moe_decode_official,moe_decode_repacked,moe_decode_official_repacked,moe_decode_official_repacked_rt2,moe_decode_repacked_rt2,moe_decode_official_repacked_rt8,moe_decode_repacked_rt8,moe_decode_official_repacked_rt16,moe_decode_repacked_rt16,moe_decode_official_repacked_rot,moe_decode_repacked_rot --per-op 20 2>&1 \
  | tee $OUT/parity_defaults.txt | grep -E "FAIL|passed|rror"
echo "== bench r4 vs s0"
timeout 110 $B/bench_kernels/bench_moe_linear --decode-ab --ab r4,s0 --formats mxfp4,nvfp4 --replays 15 2>&1 \
  | tee $OUT/bench_ab_final.txt | grep -E "read-only kernel  4096|rp |speed vs|rror"
