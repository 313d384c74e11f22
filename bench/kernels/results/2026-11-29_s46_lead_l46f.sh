#!/usr/bin/env bash
# Session 46, call l46f (H200): Flash T = 3 / 4 (MXFP4 T = 4 at 79.1-79.2% of read, just under the
# target): W2's row tiles forced to 1 / 2 / 4 ("s-1" / "s-2" / "s-4": W1/W3 at the model's) and
# W1/W3's to 2 ("s-20") against the default (the wave model's), MXFP4 / NVFP4, official bf16, two
# passes, full clock. Main d6de6c2's binary.
set -uo pipefail
nvidia-smi -L
N=l46f
source scripts/device_call_prelude.sh
S=x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 250 $G/bench_moe_linear --decode-ab --ab-official --ab s0$S,s-1$S,s-2$S,s-4$S,s-20$S --shapes flash --formats mxfp4,nvfp4 --tokens 3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-260
done
grep -E "rp official" $L/ab_2.txt | cut -c1-120
save; echo "done t=$(el)"
