#!/usr/bin/env bash
# Session 31 lead, call l31p (H200): ncu of the engine's ws kernel (the plan at HCA 1M T=32, rows from HBM) and of the
# diag's loop with rows by the engine's 2D copies (65 tiles per CTA), same sections, to compare what the engine's loop
# spends its extra ~0.2 us per tile on.
set -uo pipefail
nvidia-smi -L
N=l31p
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
S="--section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy"
timeout -s KILL 200 ncu $S -k regex:attention_decode_ws_kernel --launch-skip 3 --launch-count 1 $G/bench_attention --alt-rows --no-ceilings --cases "32,64,hca,1048576,0" > $OUT/${N}_ncu_engine.txt 2>&1; echo "engine exit $?"
timeout -s KILL 200 ncu $S -k regex:consumers_kernel --launch-skip 2 --launch-count 1 $G/attn_consumer_split 65 "2D maps" > $OUT/${N}_ncu_diag.txt 2>&1; echo "diag exit $?"
for f in engine diag; do echo "== $f"; grep -E "Duration|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Active Warps Per Scheduler|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Shared.*[Bb]ank|Registers Per|Shared Memory Configuration Size|Dynamic Shared|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|DRAM Throughput|Stall" $OUT/${N}_ncu_$f.txt | head -40; done
