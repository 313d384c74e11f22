#!/usr/bin/env bash
# Session 22 lead, call v22f (H200): ncu of the final tree's fast list score kernel (T=1 x 256K FP4 keys,
# top-512 plan rows): speed of light, warp states, pipe utilization, SASS stall samples (for the next session's
# choice between the BF16 loop and an FP8 one). ncu serializes kernels: stall reasons and pipe shares, not times.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v22f/v22f.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/v22f; rm -rf $L; mkdir -p $L
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); $NCU --version | tail -1
timeout 120 $NCU --clock-control none --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats \
  --section Occupancy --import-source no -k regex:indexer_score_three_kernel -s 4 -c 1 -f -o /tmp/ncu_score \
  $G/bench_attention --indexer-plan-only --no-ceilings > $L/ncu_log.txt 2>&1
echo "ncu rc=$? t+$(el)"
$NCU -i /tmp/ncu_score.ncu-rep --page details > $L/details.txt 2>&1
$NCU -i /tmp/ncu_score.ncu-rep --page source --csv --print-source sass > $L/src.csv 2>/dev/null
python3 $G/ncu_sum.py $L/src.csv > $L/stalls.txt 2>&1
grep -E "Function Name|Grid Size|Block Size|Registers|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|Theoretical Occupancy" $L/details.txt | head -40
grep -iE "pipe|tensor|utiliz" $L/details.txt | head -20
head -30 $L/stalls.txt
gzip -c $L/src.csv > $L/src.csv.gz; rm -f $L/src.csv
tar czf $OUT/v22f_logs.tgz -C $L . 2>/dev/null
echo "done t+$(el)"; ls -la $OUT
