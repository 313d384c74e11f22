#!/bin/bash
# MOE8 run 2: parity of the staged families (all) and of the default families with the new
# default (staging W1/W3 T <= 4, W2 T = 2..4); A/B off (s0, main) vs the default and variants.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe8/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== parity xs + defaults"
timeout 60 $B/test_backend_ops --filter moe_decode_repacked_xs,moe_decode_official_repacked_xs,moe_decode_official_repacked_rt2_xs,moe_decode_official_repacked,moe_decode_repacked,moe_decode_official_repacked_rt2,moe_decode_official_repacked_rt8 --per-op 12 2>&1 \
  | tee $OUT/parity.txt | grep -E "FAIL|passed|rror"
echo "== bench mxfp4"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab s0,s0x4.2.4,s0x4,s0x4.0.0 --formats mxfp4 --tokens 1,4 --replays 20 2>&1 \
  | tee $OUT/bench_mxfp4.txt | grep -E "read-only kernel  4096|rp |speed vs|rror"
echo "== bench nvfp4"
timeout 40 $B/bench_kernels/bench_moe_linear --decode-ab --ab s0,s0x4.2.4 --formats nvfp4 --tokens 1,4 --replays 20 2>&1 \
  | tee $OUT/bench_nvfp4.txt | grep -E "speed vs|rror"
