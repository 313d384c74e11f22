#!/usr/bin/env bash
# Session 24 lead, call l24a (H200): where the W8A8 decode linear's time goes on the H200. Diagnostic twins of the
# default plan's kernel (wip/w8a8-diag), alternating in one process: d0 the kernel, d1 weights loaded and folded
# (no x, no MMA), d2 d1 + the x loads, d3 the MMAs on constant x (no x loads); then ncu (SOL, warp states, memory,
# SASS stall samples) of d0 and d1 on Pro wq_b T=1 and d0 on Pro wo_b T=1.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24a/l24a.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24a; rm -rf $L; mkdir -p $L
timeout 150 $G/bench_linear_gemm --w8a8-diag 3 > $L/diag.txt 2>&1; echo "exit $?" >> $L/diag.txt
echo "diag t=$(el)"; grep -E "ceiling|^diag" $L/diag.txt | cut -c1-400
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); $NCU --version | tail -1
n() { local tag=$1; shift; timeout 100 $NCU --clock-control none --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section SchedulerStats \
  --import-source no -k regex:fp8act_gemm_kernel -s 3 -c 1 -f -o /tmp/ncu_$tag $G/bench_linear_gemm "$@" > $L/ncu_${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t+$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > $L/${tag}_src.csv 2>/dev/null
  python3 $G/ncu_source_top.py $L/${tag}_src.csv > $L/${tag}_stalls.txt 2>&1
  echo "== $tag"; grep -E "Grid Size|Block Size|Registers Per|Duration|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|No Eligible|Active Warps Per Scheduler|Eligible Warps Per|Warp Cycles Per Issued|Achieved Occupancy|Theoretical Occupancy|L1/TEX Hit|L2 Hit" $L/${tag}_details.txt | head -30
  head -40 $L/${tag}_stalls.txt | cut -c1-300
  gzip -f $L/${tag}_src.csv
}
n d0_prowqb --profile-w8a8 pro.wq_b 1 0
n d1_prowqb --profile-w8a8 pro.wq_b 1 1
n d0_prowob --profile-w8a8 pro.wo_b 1 0
tar czf $OUT/l24a_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
