#!/bin/bash
# MOE9 run 2: ncu of the default configuration (Flash MXFP4 official bf16, T = 1 and 16; W1/W3
# and W2 launches, one eager call each) with stall sampling per SASS line; parity of the 32-bit
# scale bookkeeping (all ring kernels) and of the switches; new vs main binary, default config.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xzf .wt/moe9/bins.tgz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== ncu"
timeout 70 ncu --clock-control none -k regex:moe_decode_gemm --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --section SourceCounters \
  -o /tmp/moe9prof -f $B/bench_kernels/bench_moe_linear --profile --decode-ab --ab s0x4.2.4 --shapes flash \
  --formats mxfp4 --tokens 1,16 2>&1 | grep -E "profiled|==PROF==|rror" | head -20
ncu -i /tmp/moe9prof.ncu-rep --page raw --csv > $OUT/ncu_raw.csv 2>&1
ncu -i /tmp/moe9prof.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1; gzip -c /tmp/src.csv > $OUT/ncu_src.csv.gz
ls -la $OUT; grep -E "smsp__average_warps_issue_stalled|gpu__time_duration.sum|smsp__issue_active.avg.pct|dram__throughput.avg.pct" $OUT/ncu_raw.csv | head -2 | cut -c1-300
echo "== parity"
timeout 55 $B/test_backend_ops --filter moe_decode_repacked,moe_decode_official_repacked,moe_decode_official_repacked_xs,moe_decode_repacked_xs,moe_decode_official_repacked_rt2,moe_decode_official_repacked_d6,moe_decode_official_repacked_d8_ew_pr,moe_decode_official_repacked_pr,moe_decode_official_repacked_ew --per-op 5 2>&1 \
  | tee $OUT/parity.txt | grep -E "FAIL|passed|rror"
echo "== bench new"
timeout 40 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4ep4 --formats mxfp4 --replays 25 2>&1 \
  | tee $OUT/bench_new.txt | grep -E "read-only kernel  4096|rp official|rror"
echo "== bench main"
timeout 40 $B/bench_kernels/bench_moe_linear_main --decode-ab --ab s0x4.2.4 --formats mxfp4 --replays 25 2>&1 \
  | tee $OUT/bench_main.txt | grep -E "read-only kernel  4096|rp official|rror"
