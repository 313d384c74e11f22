#!/usr/bin/env bash
# Session 49, call l49c (H200; main's tree after the ACC2 rule, db700b9's kernels): a measurement only,
# no new code. Does a one-tile W2 with two accumulator sets (ACC2: two HMMA chains per matrix) beat
# W2P (two row tiles a warp-round, the other way to two chains) where the default takes W2P: T = 1
# (both shapes, W2 at RT 2), Pro T = 2..4 (4-slot W2P), T = 5..8 (both shapes)?
# In one process, two passes: the default ("ba", W2P by its rule) against W2P only from T = 9 with
# two sets at every T ("y9 b1"), the same with W2's row tiles forced to 2 ("s-2": W1/W3 by the model).
set -uo pipefail
nvidia-smi -L
N=l49c
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayakaba
O=s0x4.2.4hwlpfgmcqay9kab1
R=s-2x4.2.4hwlpfgmcqay9kab1
for pass in 1 2; do
  timeout -s KILL $(( pass == 1 ? 260 : 540 - $(el) )) $G/bench_moe_linear --decode-ab --ab-official --ab $D,$O,$R --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,3,4,5,6,8 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | sed "s/$D/D/g; s/$O/O/g; s/$R/R/g" | cut -c1-200
  save
done
echo "done t=$(el)"
