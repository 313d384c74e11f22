#!/usr/bin/env bash
# Session 43, call l43d (H200): row tiles forced (RT codes s-UD: u W1/W3, d W2) on the landed tree's bench_moe_linear
# (l43c's package, the first binary): Pro T = 1 MXFP4 and NVFP4 (main's binary in l43a: W1/W3 at RT 1 1.025-1.035x
# MXFP4, 0.976x NVFP4), two passes; Flash T = 2, 4, 8 MXFP4 (61-79% of read), one pass.
set -uo pipefail
nvidia-smi -L
N=l43c
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
S=x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 100 $G/bench_moe_linear --decode-ab --ab-official --ab $D,s-12$S,s-21$S,s-11$S,s-14$S,s-41$S --shapes pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/pro_rt_$pass.txt 2>&1
  echo "== pro T=1 pass $pass rc=$? t=$(el)"; grep -E "speed vs" $L/pro_rt_$pass.txt | cut -c1-300
  save
done
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $D,s-11$S,s-12$S,s-21$S,s-22$S,s-14$S,s-41$S --shapes flash --formats mxfp4 --tokens 2,4,8 --replays 12 --replay-gap-ms 80 > $L/flash_rt.txt 2>&1
echo "== flash T=2,4,8 rc=$? t=$(el)"; grep -E "speed vs" $L/flash_rt.txt | cut -c1-300
save; echo "done t=$(el)"
