#!/bin/bash
# MOE10 run 2: A/B of the launch-chain switches (moe_decode_set_chain: h = quantize in W1/W3,
# w = one-warp plan, l = shorter load chains; the combine fold of run 1 removed), official bf16
# MXFP4, Flash and Pro, T = 1..64, with the baseline twice (control); parity of the chain cases
# (bit-equal to the default chain) and of the default families.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe10/bins.tar.xz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 80 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4l,s0x4.2.4w,s0x4.2.4wl,s0x4.2.4hwl,s0x4.2.4h,s0x4.2.4 --formats mxfp4 --replays 30 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|speed vs|rror"
echo "== parity chain"
F=moe_decode_official_repacked_chain5,moe_decode_official_repacked_chain1,moe_decode_official_repacked_chain4,moe_decode_repacked_chain5,moe_decode_official_chain5
F=$F,moe_decode_official_repacked_rt2_chain5,moe_decode_official_repacked_rt8_chain5,moe_decode_official_repacked_xs_chain5
F=$F,moe_decode_official_repacked_chain2,moe_decode_official_repacked_chain7,moe_decode_repacked_chain7
timeout 50 $B/test_backend_ops --filter $F 2>&1 | tee $OUT/parity_chain.txt | grep -E "FAIL|passed|rror"
echo "== parity defaults"
timeout 30 $B/test_backend_ops --filter moe_decode_official_repacked,moe_decode_repacked 2>&1 | tee $OUT/parity_default_repacked.txt | grep -E "FAIL|passed|rror"
grep -c " OK" $OUT/parity_default_repacked.txt
timeout 25 $B/test_backend_ops --filter moe_decode_official,moe_decode 2>&1 | tee $OUT/parity_default_checkpoint.txt | grep -E "FAIL|passed|rror"
grep -c " OK" $OUT/parity_default_checkpoint.txt
