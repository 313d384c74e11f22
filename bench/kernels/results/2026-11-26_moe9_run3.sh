#!/bin/bash
# MOE9 run 3: parity of the 4-slot scale ring (_q4), staged multi-pair chunks (_sp2, _sp8), the
# predicted plan (_pr) and the checkpoint / rotation ring kernels (32-bit scale bookkeeping);
# A/B at T = 1..64 (official bf16 MXFP4): staging at every T, 4 scale slots, 2-pair staging.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe9/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4q,s0x64.2.64,s0x64.2.64q,s0x64.2.64qv2,s0x64.2.64qu2v2,s0x4.2.4qep4 --formats mxfp4 --replays 20 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|speed vs|rror"
echo "== parity new"
timeout 75 $B/test_backend_ops --filter moe_decode_official_repacked_q4,moe_decode_official_repacked_xs_q4,moe_decode_repacked_q4,moe_decode_official_repacked_rt2_q4,moe_decode_official_repacked_xs_sp2,moe_decode_official_repacked_xs_q4_sp2,moe_decode_repacked_xs_sp2,moe_decode_official_repacked_xs_sp8,moe_decode_official_repacked_xs_q4_sp8,moe_decode_repacked_xs_sp8,moe_decode_official_repacked_d8_ew_pr,moe_decode_official_repacked_pr 2>&1 \
  | tee $OUT/parity_new.txt | grep -E "FAIL|passed|rror"
echo "== parity other ring kernels"
timeout 20 $B/test_backend_ops --filter moe_decode_official,moe_decode_official_repacked_rot,moe_decode_repacked_rot --per-op 3 2>&1 \
  | tee $OUT/parity_other.txt | grep -E "FAIL|passed|rror"
