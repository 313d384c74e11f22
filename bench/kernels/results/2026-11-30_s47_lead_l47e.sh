#!/usr/bin/env bash
# Session 47, call l47e (H200): why finer W1/W3 grids lose at Flash T = 2..4 (the rough model of
# 2026-11-30_s47_decode_sim.py favours W1/W3 at RT 2 by ~2 us at T = 4; l46f measured 0.98-0.99x).
# Block traces (bench_moe_linear_trace, -DDSV4_MOE_TRACE, main 461f242's kernels) of the default
# and of W1/W3 forced to RT 2 ("s-20..."), Flash MXFP4 T = 2 / 3 / 4; then the untraced A/B of the
# same two configurations in one process (main's bench_moe_linear), two passes, full clock.
set -uo pipefail
nvidia-smi -L
N=l47e
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
R=s-20x4.2.4hwlpfgmcqayaka
for c in $D $R; do
  export DSV4_MOE_TRACE_RAW=$L/raw_$c.tsv
  timeout -s KILL 100 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $c --shapes flash --formats mxfp4 --tokens 2,3,4 --replays 6 > $L/trace_$c.txt 2>&1
  echo "== trace $c rc=$? t=$(el)"; unset DSV4_MOE_TRACE_RAW; wc -l $L/raw_$c.tsv
  grep -E "rp official" $L/trace_$c.txt | cut -c1-120
  save
done
for pass in 1 2; do
  timeout -s KILL 80 $G/bench_moe_linear --decode-ab --ab-official --ab $D,$R --shapes flash --formats mxfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/ab_$pass.txt | cut -c1-200
done
save; echo "done t=$(el)"
