#!/usr/bin/env bash
# Session 41, call l41b (H200): where the T = 1 decode's warps stall on the H200 (the last source-level profile of these
# kernels was MOE18's at T = 16; at T = 1 only MOE9's on an H100). ncu --set full with SASS source counters of the
# first W1/W3 and W2 launches (moe_decode_gemm) of main's bench (435d24f), default config, MXFP4, Flash and Pro T = 1.
set -uo pipefail
nvidia-smi -L; ncu --version | tail -1
N=l41b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for s in flash pro; do
  timeout -s KILL 150 ncu --clock-control none --set full --import-source no -k regex:moe_decode_gemm -c 2 -f -o $L/$s \
    $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes $s --formats mxfp4 --tokens 1 --replays 2 > $L/${s}_log.txt 2>&1
  echo "== ncu $s rc=$? t=$(el)"
  ncu -i $L/$s.ncu-rep --page details > $L/${s}_details.txt 2>&1
  ncu -i $L/$s.ncu-rep --page source --csv --print-source sass > $L/${s}_src.csv 2>$L/${s}_src.err
  python3 scripts/ncu_split_source.py $L/${s}_src.csv $L/${s}_src
  for k in 0 1; do python3 scripts/ncu_source_top.py $L/${s}_src_k$k.csv > $L/${s}_top_k$k.txt 2>&1; done
  grep -E "moe_decode_gemm|Duration|Registers Per|Achieved Occupancy|Issued Warp Per Scheduler|No Eligible|Active Warps Per Scheduler|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |DRAM Throughput|Memory Throughput|L2 Cache Throughput|Block Limit" $L/${s}_details.txt | cut -c1-150 | head -50
  rm -f $L/${s}_src.csv; gzip -f $L/${s}_src_k*.csv; save
done
for f in $L/*_top_k*.txt; do echo "== $f"; sed -n 2,40p $f | cut -c1-260; done
save; echo "done t=$(el)"
