#!/usr/bin/env bash
# MOE17 call 1 (main's binary, no kernel change): (a) SM / memory clocks and power while the decode
# bench runs, and x staged in shared memory at every T vs main's T <= 4 (config switches only);
# (b) ncu of the W1/W3 and W2 kernels at Flash T = 4 and 16 under real clocks and under ncu's base
# clocks: does the kernel time follow the SM clock (issue / latency in the SM) or not (memory side)?
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe17/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
X=$B/bench_kernels/bench_moe_linear
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 250 >$OUT/clk.txt 2>&1 &
CP=$!
(sleep 12; nvidia-smi -q -d PERFORMANCE >$OUT/perf.txt 2>&1) &
timeout 60 $X --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc,s0x64.2.64hwlpfgmc,s0x64.2.64u2v2hwlpfgmc --formats mxfp4 --tokens 4,16,64 --replays 15 >$OUT/bench.txt 2>&1
echo "bench exit $?"; kill $CP
grep -E "read-only kernel  4096" $OUT/bench.txt
grep -E "rp official|speed vs" $OUT/bench.txt | sed -E 's/ +/ /g' | cut -c1-150
echo "clocks (sm MHz, mem MHz, W) over the bench:"; awk -F, '{print $1}' $OUT/clk.txt | sort | uniq -c | sort -rn | head -6
awk -F, '{print $3}' $OUT/clk.txt | sort -n | awk '{a[NR]=$1} END{print "power min/med/max", a[1], a[int(NR/2)], a[NR]}'
grep -iE "Active|Throttle|Slowdown|Power Cap|Thermal|Idle" $OUT/perf.txt | grep -v "Not Active" | head -8
NCU=$(which ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
for cc in none base; do
  timeout 40 $NCU --clock-control $cc -k regex:moe_decode_gemm --section WarpStateStats --metrics $M -o /tmp/p_$cc -f \
    $X --profile --decode-ab --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 4,16 2>&1 | grep -E "profiled|rror" | head
  $NCU -i /tmp/p_$cc.ncu-rep --page raw --csv >$OUT/ncu_raw_$cc.csv 2>&1
  python3 bench/kernels/results/2026-11-26_s14_moe17_ncu_sum.py $OUT/ncu_raw_$cc.csv | tee $OUT/ncu_sum_$cc.txt
done
