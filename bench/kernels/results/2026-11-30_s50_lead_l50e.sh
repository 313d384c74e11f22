#!/usr/bin/env bash
# Session 50, l50e (H200): the landed rule (moe_decode_w2_h_first: W2's early readiness read and h
# row before the ring at T = 1 for Pro-sized W2 and NVFP4 T = 2..4; host code only, the kernels'
# SASS identical to l50c's, whose parity ran 294 / 294 with them at every T). test_gpu_model on
# this binary; in-process A/B, the rule (default) against never ("n") and always ("or"), T = 1 / 2
# / 4 / 8, both shapes and formats, two passes.
set -uo pipefail
nvidia-smi -L
N=${N:-l50e}
source scripts/device_call_prelude.sh
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
D=s0x4.2.4hwlpfgmcqayakaba
for pass in 1 2; do
  timeout -s KILL $(( pass == 1 ? 200 : 520 - $(el) )) $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}n,${D}or --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,4,8 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | sed 's/s0x4.2.4hwlpfgmcqayakaba/D/g' | cut -c1-120; save
done
echo "done t=$(el)"
