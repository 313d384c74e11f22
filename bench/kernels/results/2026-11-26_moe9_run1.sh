#!/bin/bash
# MOE9 run 1: parity of the new switches (ring depth 6/8, early W2, predicted plan) and of the
# default families; A/B of the switches at T = 1, 4 (7 configurations, stage breakdown) and
# T = 16, 64 (4); main's bench binary (6dcb52c) with the default configuration as the baseline.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe9/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== parity new"
timeout 70 $B/test_backend_ops --filter moe_decode_official_repacked_d6,moe_decode_official_repacked_d8,moe_decode_repacked_d6,moe_decode_repacked_d8,moe_decode_official_repacked_rt2_d6,moe_decode_official_repacked_rt2_d8,moe_decode_official_repacked_ew,moe_decode_official_repacked_d6_ew,moe_decode_official_repacked_d8_ew,moe_decode_official_repacked_pr,moe_decode_repacked_pr,moe_decode_official_repacked_d6_ew_pr,moe_decode_official_repacked_d8_ew_pr 2>&1 \
  | tee $OUT/parity_new.txt | grep -E "FAIL|passed|rror"
echo "== parity defaults"
timeout 25 $B/test_backend_ops --filter moe_decode_repacked,moe_decode_official_repacked --per-op 5 2>&1 \
  | tee $OUT/parity_defaults.txt | grep -E "FAIL|passed|rror"
echo "== bench T=1,4"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --breakdown --ab s0x4.2.4,s0,s0x4.2.4e,s0x4.2.4p4,s0x4.2.4d6,s0x4.2.4d8,s0x4.2.4d6ep4 --formats mxfp4 --tokens 1,4 --replays 15 2>&1 \
  | tee $OUT/bench_t1t4.txt | grep -E "read-only kernel  4096|rp official|speed vs|breakdown|stage|rror"
echo "== bench T=16,64"
timeout 50 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4e,s0x4.2.4d6,s0x4.2.4d8 --formats mxfp4 --tokens 16,64 --replays 15 2>&1 \
  | tee $OUT/bench_t16t64.txt | grep -E "read-only kernel  4096|rp official|speed vs|rror"
echo "== main binary, default"
timeout 35 $B/bench_kernels/bench_moe_linear_main --decode-ab --ab s0x4.2.4 --formats mxfp4 --replays 15 2>&1 \
  | tee $OUT/bench_main.txt | grep -E "read-only kernel  4096|rp official|rror"
