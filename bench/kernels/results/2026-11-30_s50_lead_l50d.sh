#!/usr/bin/env bash
# Session 50, l50d (H200). 1) Second look at l50c's "o r" (W2's early readiness read and h row
# before the ring; default chain 1919 in this build): in-process A/B against 383's configuration at
# T = 1 / 2 / 4 / 8, both shapes and formats, two passes. 2) l50b's 2-round ring at T >= 16
# (bench_moe_linear_rs2, -DDSV4_MOE_RING_STAGES=2, built from cc1115b; the configuration below
# runs the same launches in both binaries) against main's binary, single-configuration processes
# alternating, T = 16 / 64, two passes each.
set -uo pipefail
nvidia-smi -L
N=${N:-l50d}
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayakaba
for pass in 1 2; do
  timeout -s KILL 130 $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}or --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,4,8 --replays 10 --replay-gap-ms 80 > $L/ab_or_$pass.txt 2>&1
  echo "== ab or $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_or_$pass.txt | cut -c1-160; save
done
for pass in 1 2; do
  for b in bench_moe_linear bench_moe_linear_rs2; do
    timeout -s KILL 80 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4,nvfp4 --tokens 16,64 --replays 10 --replay-gap-ms 80 > $L/ab_${b}_p$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096" $L/ab_${b}_p$pass.txt; grep -E "^(flash|pro) .* rp official" $L/ab_${b}_p$pass.txt | awk '{print $1,$2,$7,$9,$11}' | tr '\n' ';'; echo
    save
  done
done
echo "done t=$(el)"
