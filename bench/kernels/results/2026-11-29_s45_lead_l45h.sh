#!/usr/bin/env bash
# Session 45, call l45h (H200): the W1/W3 folding epilogue in steps (trace build with DSV4_MOE_TRACE_EPI,
# bench_moe_linear_trace_epi): W1/W3 records t[0] = last warp's loop end, t[1] after the block's hf stores (K parts,
# SwiGLU), t[2] after the fold's acq_rel count, t[3] exit (folding blocks: reload, quantize, h stores, release).
# Default configuration, Flash / Pro MXFP4, T = 1 and 4. ~1 min.
set -uo pipefail
nvidia-smi -L
N=l45h
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
export DSV4_MOE_TRACE_RAW=$L/raw_epi.tsv
timeout -s KILL 100 $G/bench_moe_linear_trace_epi --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace_epi.txt 2>&1
echo "== trace rc=$? t=$(el)"; unset DSV4_MOE_TRACE_RAW; wc -l $L/raw_epi.tsv
save; echo "done t=$(el)"
