#!/usr/bin/env bash
# Session 46, call l46c (H200): 1) test_gpu_model --only-repacked-dense with linear_decode_nvfp4
# on every repacked matrix it supports (mode 2: wo_b's K split too); 2) W2P at T = 2..4 on the
# MoE decode (default "ya": W2P at T = 1 and T >= 5 on the H200 class; "y2": from T = 2), not
# measured since session 38 (0.95-0.97x at Flash T = 4 then, before session 39's scale slots and
# the round's instruction cuts of sessions 41-44): MXFP4 and NVFP4, Flash and Pro, T = 2 / 3 / 4,
# two passes, full clock (80 ms gaps).
set -uo pipefail
nvidia-smi -L
N=l46c
source scripts/device_call_prelude.sh
timeout -s KILL 200 $G/test_gpu_model --only-repacked-dense > $L/gpu_model_dense.txt 2>&1; echo "exit $?" >> $L/gpu_model_dense.txt
echo "== gpu_model dense t=$(el)"; grep -E "linear_decode_nvfp4|passed" $L/gpu_model_dense.txt | cut -c1-260
save
D=s0x4.2.4hwlpfgmcqayaka
E=s0x4.2.4hwlpfgmcqay2ka
for pass in 1 2; do
  timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $D,$E --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-180
done
save; echo "done t=$(el)"
