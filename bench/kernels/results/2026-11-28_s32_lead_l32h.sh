#!/usr/bin/env bash
# Session 32 lead, call l32h (H200): ncu of the ws kernel at HCA 1M T=32 (the plan, bf16 pools) with
# the key tiles as one 3-D box (plan.diag 0) and as 8 2-D boxes (plan.diag 128): where the 8 copies
# cost the consumers (l32c: the loop 1.20 vs 1.04 us per tile, the ring alone no faster).
set -uo pipefail
nvidia-smi -L
N=l32h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats --section Occupancy"
for d in 0 128; do
  DSV4_BF16_NCU_DIAG=$d timeout -s KILL 200 ncu $S -k regex:attention_decode_ws_kernel --launch-skip 1 --launch-count 1 $G/bench_attention --kv-fp8-ab --no-ceilings --cases "32,64,hca,1048576,0" > $OUT/${N}_ncu_d$d.txt 2>&1; echo "diag $d exit $?"
done
for d in 0 128; do echo "== diag $d"; grep -E "Duration|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |[Bb]ank|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Stall|Shared Memory|L1/TEX Cache Throughput|L2 Cache Throughput" $OUT/${N}_ncu_d$d.txt | head -40; done
