#!/usr/bin/env bash
# Session 24 lead, call l24d (H200): ncu of main's routed-MoE decode at T = 1 (official order, repacked MXFP4, bf16
# activations; bench_moe_linear --profile): per GEMM kernel (W1/W3, W2) SOL, warp states, SASS stall samples, to look
# for loads consumed right after they are issued (the W8A8 kernel's E8M0 scale branch, l24a).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24d/l24d.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24d; rm -rf $L; mkdir -p $L
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for sh in flash pro; do
  for i in 2 3; do  # --profile: checkpoint-layout W1/W3, W2, then the repacked (engine's) W1/W3 (2), W2 (3)
    tag=${sh}_$i
    timeout 150 $NCU --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
      --section LaunchStats --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis --import-source no \
      -k regex:moe_decode_gemm -s $i -c 1 -f -o /tmp/ncu_$tag $G/bench_moe_linear --profile --decode-only --shapes $sh \
      --formats mxfp4 --tokens 1 > $L/ncu_${tag}_log.txt 2>&1
    echo "ncu $tag rc=$? t+$(el)"
    $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/${tag}_details.txt 2>&1
    $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > $L/${tag}_src.csv 2>/dev/null
    python3 $G/ncu_source_top.py $L/${tag}_src.csv > $L/${tag}_stalls.txt 2>&1
    echo "== $tag"; grep -E "moe_decode_gemm|Duration|DRAM Throughput|Registers Per|Grid Size|Block Size|Achieved Occ|Eligible Warps Per|Issue Slots Busy|No Eligible" $L/${tag}_details.txt | cut -c1-160 | head -14
    sed -n 3,4p $L/${tag}_stalls.txt | cut -c1-500
    gzip -f $L/${tag}_src.csv
  done
done
tar czf $OUT/l24d_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
