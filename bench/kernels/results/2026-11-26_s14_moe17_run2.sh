#!/usr/bin/env bash
# MOE17 (prepared, not run in session 14: device budget < 600 s). One call, <= ~150 s:
# (1) main vs DSV4_MOE17_DIAG (copies-only round: ring copies, waits, scale and x loads kept, the
#     expansion / scale / HMMA math replaced by one XOR fold; wrong y) at the engine's default,
#     the pure-read pair of the same routings: lead call 2 (h200_2026-11-26_s14_lead2_shortread.txt); SM clock and power
#     sampled during main's bench. Reading: diag ~ short-read => the SM work is the gap (issue /
#     latency); diag ~ main (~63%) => the kernel's memory pipeline itself (grid, per-warp 1 KB
#     streams, ring) caps it, whatever the math costs.
# (2) ncu of main's W1/W3 + W2 at Flash T = 16, real clocks vs ncu base clocks (time vs SM clock),
#     with DRAM / L2 / L1 traffic.
# Binaries: bins.tar.xz = bench_kernels/bench_moe_linear (main) + diag/bench_moe_linear.
set -uo pipefail
W=.wt/moe17n
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b17n; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
A="--decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 4,16,64 --replays 15"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 250 >$OUT/clk.txt 2>&1 &
CP=$!
timeout 40 $B/bench_kernels/bench_moe_linear $A >$OUT/bench_main.txt 2>&1; echo "main exit $?"; kill $CP
timeout 40 $B/diag/bench_moe_linear $A >$OUT/bench_diag.txt 2>&1; echo "diag exit $?"
for v in main diag; do echo "== $v"; grep -E "read-only kernel  4096|rp official|pair" $OUT/bench_$v.txt | sed -E 's/ +/ /g' | cut -c1-140; done
echo "SM MHz during main:"; awk -F, '{print $1}' $OUT/clk.txt | sort | uniq -c | sort -rn | head -4
awk -F, '{print $3}' $OUT/clk.txt | sort -n | awk '{a[NR]=$1} END{print "power W min/med/max", a[1], a[int(NR/2)], a[NR]}'
NCU=$(which ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__warps_eligible.avg.per_cycle_active,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
for cc in none base; do
  timeout 30 $NCU --clock-control $cc -k regex:moe_decode_gemm --section WarpStateStats --metrics $M -o /tmp/p_$cc -f \
    $B/bench_kernels/bench_moe_linear --profile --decode-ab --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 16 2>&1 | grep -E "rror" | head -3
  $NCU -i /tmp/p_$cc.ncu-rep --page raw --csv >$OUT/ncu_raw_$cc.csv 2>&1
  python3 $W/2026-11-26_s14_moe17_ncu_sum.py $OUT/ncu_raw_$cc.csv | tee $OUT/ncu_sum_$cc.txt
done
