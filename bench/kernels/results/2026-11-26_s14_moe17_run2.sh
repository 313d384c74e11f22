#!/usr/bin/env bash
# MOE17 call (prepared in session 14; not run there: device budget_left_s < 600 from 23:02).
# One call, ~100-130 s. Binaries (bins.tar.xz): bench_kernels/bench_moe_linear = main (wip/moe17
# 1bb135f default build, SASS-identical to main 8e4397d: MOE18's aligned ring), diag/ =
# -DDSV4_MOE17_DIAG (copies-only round, WRONG y; no parity needed: the default is unchanged).
# (1) main / diag / main: engine default config, Flash + Pro MXFP4 T = 4, 16, 64; SM clock
#     and power sampled during the first main run. Reading of diag: ~ the pure-read pair (lead
#     call 2: Flash 84-90%, Pro 92-94%) => the SM work + its coupling to the ring is the gap;
#     ~ main => the kernel's memory pipeline caps it whatever the math costs.
# (2) ncu of main's W1/W3 + W2 at Flash T = 16 under real and base clocks (time vs SM clock).
set -uo pipefail
W=.wt/moe17n
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b17n; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
A="--decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 4,16,64 --replays 15"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 250 >$OUT/clk.txt 2>&1 &
CP=$!
timeout 30 $B/bench_kernels/bench_moe_linear $A >$OUT/bench_main.txt 2>&1; echo "main exit $?"; kill $CP
timeout 30 $B/diag/bench_moe_linear $A >$OUT/bench_diag.txt 2>&1; echo "diag exit $?"
timeout 30 $B/bench_kernels/bench_moe_linear $A >$OUT/bench_main2.txt 2>&1; echo "main2 exit $?"
for v in main diag main2; do echo "== $v"; grep -E "read-only kernel  4096|rp official" $OUT/bench_$v.txt | sed -E 's/ +/ /g' | cut -c1-120; done
echo "SM MHz during main:"; awk -F, '{print $1}' $OUT/clk.txt | sort | uniq -c | sort -rn | head -4
awk -F, '{print $3}' $OUT/clk.txt | sort -n | awk '{a[NR]=$1} END{print "power W min/med/max", a[1], a[int(NR/2)], a[NR]}'
NCU=$(which ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__warps_eligible.avg.per_cycle_active,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
for cc in none base; do
  timeout 25 $NCU --clock-control $cc -k regex:moe_decode_gemm --section WarpStateStats --metrics $M -o /tmp/p_$cc -f \
    $B/bench_kernels/bench_moe_linear --profile --decode-ab --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 16 2>&1 | grep -E "rror" | head -3
  $NCU -i /tmp/p_$cc.ncu-rep --page raw --csv >/tmp/ncu_raw_$cc.csv 2>&1
  python3 $W/2026-11-26_s14_moe17_ncu_sum.py /tmp/ncu_raw_$cc.csv | tee $OUT/ncu_sum_$cc.txt
done
