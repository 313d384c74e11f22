#!/bin/bash
# MOE10 run 1: parity of the folded launches (quantize h in W1/W3, combine in W2, one-warp plan;
# each case also compares y bit for bit with the separate launches), then the A/B (official bf16
# MXFP4, Flash and Pro, T = 1..64) with the stage breakdown at T = 1 / 4.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe10/bins.tar.xz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 75 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4h,s0x4.2.4c,s0x4.2.4w,s0x4.2.4hcw --formats mxfp4 --replays 20 --breakdown 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|speed vs|breakdown|stage|rror"
echo "== parity fold"
F=moe_decode_official_repacked_fhc,moe_decode_official_repacked_fh,moe_decode_official_repacked_fc,moe_decode_repacked_fhc,moe_decode_official_fhc
F=$F,moe_decode_official_repacked_rt2_fhc,moe_decode_official_repacked_rt8_fhc,moe_decode_official_repacked_xs_fhc
F=$F,moe_decode_official_repacked_fw,moe_decode_official_repacked_fhcw,moe_decode_repacked_fhcw
timeout 80 $B/test_backend_ops --filter $F 2>&1 | tee $OUT/parity_fold.txt | grep -E "FAIL|passed|rror"
