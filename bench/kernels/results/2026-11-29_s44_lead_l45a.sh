#!/usr/bin/env bash
# Session 44's prepared call (NOT RUN: the session's device time ran out). Why did l44f's unrolled ring loops cost a
# roughly fixed 15-21 us per call at T <= 4 (kernel 3768 -> 8192 instructions, 2% fewer per round)? 1) icache_probe
# (bench/kernels/icache_probe.cu): the cost of fetching uncached straight-line code, code evicted from L2 or still in
# it, per KB; if it is ~1 us per few KB, the decode's per-call code footprint (prologue, loop, epilogue of 2-3
# kernels) is a T = 1 cost of its own. 2) block traces of main's kernels (bench_moe_linear_trace: s44-icache's tree =
# main + the probe, built by scripts/build_moe_trace_bench.sh) and of the unrolled variant (bench_moe_linear_trace_u4:
# wip-s44-unroll4's f72fdfc sources, scripts/build_moe_variant_bench.sh ... -DDSV4_MOE_TRACE): whether the extra time
# sits in the loop (t2 - t1) or before / after it. 3) mma_subnormal_probe: whether mma.sync takes subnormal BF16
# operands and tiny products exactly (the post-MMA scaling idea of the session-44 notes). Pack l45a with the four binaries (scripts/device_pack.sh l45a
# build-s26/tests/cuda/bench_kernels/icache_probe build-s26/tests/cuda/bench_kernels/mma_subnormal_probe
# /tmp/stage45/bench_moe_linear_trace
# /tmp/stage45/bench_moe_linear_trace_u4; the tree then fits without moving fixtures). ~60 s.
set -uo pipefail
nvidia-smi -L
N=l45a
source scripts/device_call_prelude.sh
timeout -s KILL 60 $G/icache_probe > $L/icache_probe.txt 2>&1; echo "== icache_probe rc=$? t=$(el)"; cat $L/icache_probe.txt
timeout -s KILL 30 $G/mma_subnormal_probe > $L/mma_subnormal_probe.txt 2>&1; echo "== mma_subnormal_probe rc=$? t=$(el)"; cat $L/mma_subnormal_probe.txt
save
D=s0x4.2.4hwlpfgmcqayaka
for b in bench_moe_linear_trace bench_moe_linear_trace_u4; do
  export DSV4_MOE_TRACE_RAW=$L/raw_$b.tsv
  timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace_$b.txt 2>&1
  echo "== $b rc=$? t=$(el)"; wc -l $L/raw_$b.tsv; unset DSV4_MOE_TRACE_RAW
  python3 scripts/moe_trace_raw.py $L/raw_$b.tsv summary > $L/summary_$b.txt 2>&1; grep "call 0" $L/summary_$b.txt | cut -c1-220
done
save; echo "done t=$(el)"
