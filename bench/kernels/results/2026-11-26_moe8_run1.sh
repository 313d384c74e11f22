#!/bin/bash
# MOE8 run 1: parity of the staged-x families (all cases) and of the unchanged default families
# (first 6 each, the refactored non-staged loop); A/B s0 (main's defaults) vs s0x1 / s0x4.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe8/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== parity xs"
timeout 50 $B/test_backend_ops --filter moe_decode_repacked_xs,moe_decode_official_repacked_xs 2>&1 \
  | tee $OUT/parity_xs.txt | grep -E "FAIL|passed|rror"
echo "== parity defaults"
timeout 35 $B/test_backend_ops --filter moe_decode_repacked,moe_decode_official_repacked,moe_decode_official_repacked_rt2 --per-op 6 2>&1 \
  | tee $OUT/parity_defaults.txt | grep -E "FAIL|passed|rror"
echo "== bench s0 vs s0x1 vs s0x4"
timeout 75 $B/bench_kernels/bench_moe_linear --decode-ab --ab s0,s0x1,s0x4 --formats mxfp4 --tokens 1,4 --replays 20 2>&1 \
  | tee $OUT/bench_ab_xs.txt | grep -E "read-only kernel  4096|rp |speed vs|rror"
