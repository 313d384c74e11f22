#!/usr/bin/env bash
# Session 45, call l45f (H200): where a W1/W3 block's ~2-4 us between its loop end and its exit go
# at T = 1 (l45e: the slot's last block by warp 0's loop end, whose exit gates W2, spent 2.3-4.8 us
# there with the fold's round trips, and as much with the cluster fold that has none). Trace build
# with DSV4_MOE_TRACE_LASTWARP (bench_moe_linear_trace_lw): t[2] = the last warp's loop end, W1/W3's
# t[1] = warp 0's. Default configuration, Flash / Pro MXFP4, T = 1 and 4. ~1 min.
set -uo pipefail
nvidia-smi -L
N=l45f
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
export DSV4_MOE_TRACE_RAW=$L/raw_lw.tsv
timeout -s KILL 100 $G/bench_moe_linear_trace_lw --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace_lw.txt 2>&1
echo "== trace rc=$? t=$(el)"; unset DSV4_MOE_TRACE_RAW; wc -l $L/raw_lw.tsv
save; echo "done t=$(el)"
