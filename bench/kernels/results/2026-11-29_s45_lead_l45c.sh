#!/usr/bin/env bash
# Session 45, call l45c (H200): does a decode call pay for fetching its code when the SMs'
# instruction caches do not hold it (the engine runs attention and the other layers' kernels
# between two MoE calls; the bench's graphs run the calls back to back)? bench_moe_linear
# --icache-cold (branch s45-icache-cold): each call after a kernel that keeps the instruction
# caches warm (4 KB of code in a loop), evicts them (192 KB of straight-line code), or also
# evicts the L2 (a store pass over 4x the L2), each call timed by event records around it in the graph (l45b took graph differences, which mixed in the preceding kernel's own, code-dependent time); also warm + L2 pass. Official bf16 MXFP4, the
# default configuration, Flash / Pro, T = 1 / 4 / 16, full clock (80 ms gaps). ~2-3 min.
set -uo pipefail
nvidia-smi -L
N=l45c
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
timeout -s KILL 400 $G/bench_moe_linear --decode-ab --ab-official --ab $D --icache-cold --shapes flash,pro --formats mxfp4 --tokens 1,4,16 --replays 12 --replay-gap-ms 80 > $L/icache_cold.txt 2>&1
echo "== rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|icache" $L/icache_cold.txt | cut -c1-400
save; echo "done t=$(el)"
