#!/usr/bin/env bash
# Session 47, call l47d (H200): main 4ada80a (298e93a's code: chain 16's counters zeroed when a
# launch after W1/W3 is refused; host only, kernels SASS-identical to 65dcffa's). 1) test_gpu_model;
# 2) parity of the default and chain-383 moe_decode_official_repacked families; 3) the prepare
# launch's cost at T = 1: the default (chain 8's self plan) against chain 375 (the prepare launch
# and the block plan at T = 1; otherwise the same kernels), Flash / Pro MXFP4, two passes.
set -uo pipefail
nvidia-smi -L
N=l47d
source scripts/device_call_prelude.sh
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain383)?' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -1 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
E=s0x4.2.4hwlpfgmcqayaka
P=s0x4.2.4hwlfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 80 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$P --shapes flash,pro --formats mxfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/ab_$pass.txt | cut -c1-200
done
save; echo "done t=$(el)"
