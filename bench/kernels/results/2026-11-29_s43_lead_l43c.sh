#!/usr/bin/env bash
# Session 43, call l43c (H200): more resident warps for the issue-latency-bound decode loop. Four bench_moe_linear
# binaries of branch exp-s43-occupancy (main + session 42's bookkeeping patch, b: scripts/build_moe_variant_bench.sh):
#   bench_moe_linear  the tree as landed (ring of 4 rounds, MXFP4 ring kernels at <= 128 registers: 4 blocks per SM)
#   vA  -DDSV4_MOE_RING_STAGES=3 (8 KB less shared memory per W1/W3 block: Flash W1/W3 at T = 1 3 -> 4 blocks per SM)
#   vB  vA + -DDSV4_MOE_MX_MIN_BLOCKS=5 (96 registers, spills outside the round loop only: 5 blocks per SM where
#       shared memory allows)
#   vD  -DDSV4_MOE_MX_MIN_BLOCKS=5 alone
# Default configuration, MXFP4 T = 1..64 in pass 1, T = 1, 4, 16 in pass 2; NVFP4 T = 1, 4 (vD = base for NVFP4).
set -uo pipefail
nvidia-smi -L
N=l43c
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  tk=1,2,4,8,16,64; [ $pass = 2 ] && tk=1,4,16
  for b in bench_moe_linear vA vB vD; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens $tk --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-110
  done
  save
done
for b in bench_moe_linear vA vB; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "rp official" $L/${b}_nv.txt | cut -c1-110
done
save; echo "done t=$(el)"
