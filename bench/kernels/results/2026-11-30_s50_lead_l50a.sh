#!/usr/bin/env bash
# Session 50, l50a (prepared in session 49): a measurement call for the T = 1 gap at Pro (74-76% of read against
# the plain dependent up -> down read of the same bytes at 86%, session 36's --short-read). Binaries
# from main (db700b9 or later): bench_moe_linear, bench_moe_linear_trace (configure with the trace
# target as in session 47's l47e), packed as N. 1) block traces of the default at Pro T = 1, MXFP4
# and NVFP4 (per-SM timelines: W1/W3's tail, the hand-off, W2's waits); 2) the short dependent read
# and the stage breakdown at T = 1, both shapes, in one process; 3) ncu (--set full, details page)
# of Pro T = 1's W2 launch for NVFP4 with two sets ("ba") and with one (no "b"), and MXFP4: why
# two sets give NVFP4 +4-5% there although W2P already runs two chains (registers / warps per SM,
# or the NVFP4 round's longer dependent chain).
set -uo pipefail
nvidia-smi -L; ncu --version | tail -1
N=${N:-l50a}
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayakaba
U=s0x4.2.4hwlpfgmcqayaka
export DSV4_MOE_TRACE_RAW=$L/raw_pro_t1.tsv
timeout -s KILL 100 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $D --shapes pro --formats mxfp4,nvfp4 --tokens 1 --replays 6 > $L/trace.txt 2>&1
echo "== trace rc=$? t=$(el)"; unset DSV4_MOE_TRACE_RAW; wc -l $L/raw_pro_t1.tsv; grep -E "rp official|W1/W3|W2|combine" $L/trace.txt | head -40 | cut -c1-200; save
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 10 --replay-gap-ms 80 --short-read --breakdown > $L/short.txt 2>&1
echo "== short/breakdown rc=$? t=$(el)"; grep -vE "^\s*$" $L/short.txt | tail -40 | cut -c1-200; save
for c in nvfp4:$D nvfp4:$U mxfp4:$D; do
  f=${c%%:*}; cfg=${c#*:}; o=$L/ncu_${f}_${cfg}
  timeout -s KILL 120 ncu --clock-control none --set full --import-source no -k regex:moe_decode_gemm -c 2 -f -o $o \
    $G/bench_moe_linear --decode-ab --ab-official --ab $cfg --shapes pro --formats $f --tokens 1 --replays 2 > ${o}_log.txt 2>&1
  echo "== ncu $f $cfg rc=$? t=$(el)"
  ncu -i $o.ncu-rep --page details > ${o}_details.txt 2>&1
  grep -E "moe_decode_gemm|Duration|Registers Per|Achieved Occupancy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Executed Instructions  |Block Limit" ${o}_details.txt | cut -c1-150 | head -30
  rm -f $o.ncu-rep; save
done
echo "done t=$(el)"
