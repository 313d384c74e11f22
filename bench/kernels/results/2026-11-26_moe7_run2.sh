#!/bin/bash
# MOE7 run 2: parity of the tuning variants; A/B at T=1,4 (rot/shift x 4/2 blocks per SM) and
# T=16,64 (rot/shift); ncu at Flash T=1 for r4, s4, r2.
set -o pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe7/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== parity"
timeout 60 $B/test_backend_ops --filter moe_decode_official_repacked_rt2,moe_decode_repacked_rt2,moe_decode_official_repacked_rt8,moe_decode_repacked_rt8,moe_decode_official_repacked_rt16,moe_decode_repacked_rt16,moe_decode_official_repacked_rot,moe_decode_repacked_rot 2>&1 \
  | tee $OUT/parity_tuning.txt | grep -E "FAIL|passed|rror"
echo "== bench T=1,4"
timeout 70 $B/bench_kernels/bench_moe_linear --decode-ab --ab r4,s4,r2,s2,s8,s16 --formats mxfp4 --tokens 1,4 --replays 15 2>&1 \
  | tee $OUT/bench_ab_t1t4.txt | grep -E "read-only kernel  4096|rp |speed vs|rror"
echo "== bench T=16,64"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab r4,s4 --formats mxfp4 --tokens 16,64 --replays 15 2>&1 \
  | tee $OUT/bench_ab_t16t64.txt | grep -E "read-only kernel  4096|speed vs|rror"
echo "== ncu"
timeout 50 ncu --clock-control none -k regex:moe_decode_gemm --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --page raw \
  $B/bench_kernels/bench_moe_linear --profile --decode-ab --ab r4,s4,r2 --shapes flash --formats mxfp4 --tokens 1 \
  > $OUT/ncu_raw_t1.txt 2>&1
grep -E "^  [a-z_:<>]*moe_decode_gemm_kernel|profiled|gpu__time_duration.sum|smsp__issue_active.avg.pct|sm__inst_executed_pipe_(alu|fma|lsu)\.avg.pct|sm__pipe_(alu|fma|fmaheavy|shared)_cycles_active.avg.pct|l1tex__throughput.avg.pct|dram__throughput.avg.pct|stalled_(long_scoreboard|short_scoreboard|math_pipe_throttle|mio_throttle|lg_throttle|wait|not_selected|barrier)_per_issue_active|smsp__warps_active.avg.per_cycle_active|smsp__warps_eligible.avg.per_cycle_active" $OUT/ncu_raw_t1.txt | sed 's/  */ /g' | cut -c1-120
