#!/usr/bin/env bash
# Session 50, l50b. l50a's traces put W2's blocks at T = 1 (Pro) 3.5-4.3 us (median) between their
# entry and the end of their readiness wait, though 619 of 672 (MXFP4) entered after their slot's h
# was ready, and W1/W3's blocks 2.1 us between loop end and exit: dependent round trips in a
# memory system kept ~128 KB per SM deep by the 4-round rings. 1) The W2 prologue in steps (trace
# modes 1 / 2 of bench_moe_linear_trace: after the chunk, before the wait; after the wait, after the
# staged h), Pro T = 1 both formats and Flash MXFP4 T = 1. 2) The same kernels with 3- and 2-round
# rings (-DDSV4_MOE_RING_STAGES, bench_moe_linear_rs3 / _rs2) against main's binary, single-
# configuration processes alternating, T = 1 / 2 / 4 / 16 / 64, both shapes and formats.
set -uo pipefail
nvidia-smi -L
N=${N:-l50b}
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayakaba
for m in 0 1 2; do
  export DSV4_MOE_TRACE_RAW=$L/raw_m$m.tsv DSV4_MOE_TRACE_MODE=$m
  timeout -s KILL 90 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 4 > $L/trace_m$m.txt 2>&1
  echo "== trace mode $m rc=$? t=$(el)"; wc -l < $L/raw_m$m.tsv
done
unset DSV4_MOE_TRACE_RAW DSV4_MOE_TRACE_MODE; save
for pass in 1; do
  for b in bench_moe_linear bench_moe_linear_rs3 bench_moe_linear_rs2; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 10 --replay-gap-ms 80 > $L/ab_${b}_p$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "^(flash|pro) .* rp official" $L/ab_${b}_p$pass.txt | awk '{print $1,$2,$7,$9,$11}' | tr '\n' ';'; echo
    save
  done
done
echo "done t=$(el)"
