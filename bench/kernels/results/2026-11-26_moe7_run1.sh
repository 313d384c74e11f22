#!/bin/bash
# MOE7 run 1: parity of the shift expansion (default), rot/shift A/B bench, ncu of both at Flash T=16.
set -o pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe7/bins.tgz -C $B || exit 1
nvidia-smi -L; nvidia-smi --query-gpu=clocks.max.sm,clocks.sm,power.limit --format=csv
( cd $B && git -C /dev/null log 2>/dev/null; cat $B/commit.txt )
echo "== parity"
timeout 70 $B/test_backend_ops --filter moe_decode_repacked,moe_decode_official_repacked --per-op 14 2>&1 \
  | tee $OUT/parity_repacked.txt | grep -E "FAIL|passed|rror"
echo "== bench A/B"
timeout 100 $B/bench_kernels/bench_moe_linear --decode-ab --formats mxfp4 --replays 15 2>&1 \
  | tee $OUT/bench_ab.txt | grep -E "read|rp |shift vs|rror"
echo "== ncu"
timeout 60 ncu --clock-control none -k regex:moe_decode_gemm --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section MemoryWorkloadAnalysis --page raw \
  $B/bench_kernels/bench_moe_linear --profile --decode-ab --shapes flash --formats mxfp4 --tokens 16 \
  > $OUT/ncu_raw.txt 2>&1
grep -E "moe_decode_gemm_kernel<|gpu__time_duration.sum|smsp__issue_active.avg.pct|sm__inst_executed_pipe_(alu|fma|fmaheavy|lsu|fp16)[a-z_]*.avg.pct|sm__pipe_(alu|fma|fmaheavy|shared)_cycles_active.avg.pct|l1tex__throughput.avg.pct|dram__throughput.avg.pct|stalled_(long_scoreboard|short_scoreboard|math_pipe_throttle|mio_throttle|lg_throttle|wait|not_selected|barrier|dispatch_stall)_per_issue_active|smsp__warps_active.avg.per_cycle_active|smsp__warps_eligible.avg.per_cycle_active|sm__cycles_elapsed.avg.per_second" $OUT/ncu_raw.txt | sed 's/  */ /g' | cut -c1-150
