#!/usr/bin/env bash
# Session 50, l50f (H200, the budget's last ~200 s): branch wip/s50-ring-depth's per-call 2-round
# ring (template parameter NS, rule T >= 16 on the H200 class, "ea") against never (no "e"), in one
# process, T = 8 / 16 / 32 / 64, both shapes and formats; no parity (the prepared
# 2026-11-30_s50_next_ring_two_call.sh has it). Measurement only.
set -uo pipefail
nvidia-smi -L
N=${N:-l50f}
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayakaba
for pass in 1 2; do
  left=$(( 175 - $(el) )); [ $left -gt 30 ] || break
  timeout -s KILL $left $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}ea --shapes flash,pro --formats mxfp4,nvfp4 --tokens 8,16,32,64 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | sed "s/$D/D/g" | cut -c1-120
  save
done
echo "done t=$(el)"
