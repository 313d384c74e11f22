#!/usr/bin/env bash
# MOE21 call 1 (session 16): (1) f2fp_rate: issue rate / pipe of cvt.rn.f16x2.e4m3x2
# (F2FP.F16.E4M3.UNPACK_B) against LOP3 / FFMA and whole-word expansions feeding HMMAs;
# (2) bench_moe_linear A/B, main vs diag (DSV4_MOE21_DIAG=1: the converter-based FP16 round's
# instruction stream in the engine's W1/W3 and W2 kernels, converter repack; wrong y) and diag2
# (=2: the same with the checkpoint nibble order, 4 LOP3 + 3 shifts per word), alternating.
# Binaries: .wt/moe21/bins.tar.xz (commit.txt).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b21; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe21/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s)
timeout 30 $B/f2fp_rate 2>&1 | tee $OUT/f2fp.txt
A="--decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 500 >$OUT/clk.txt 2>&1 &
CP=$!
n=0
for v in main diag diag2 main diag diag2 main diag diag2; do
  n=$((n+1)); t=$(date +%s)
  timeout 22 $B/$v/bench_moe_linear $A > /tmp/bench_${n}_$v.txt 2>&1; rc=$?
  cat /tmp/bench_${n}_$v.txt >> $OUT/bench_$v.txt
  echo "== $n $v rc=$rc $(( $(date +%s)-t ))s"
  grep -E "read-only kernel  4096|bf16 " /tmp/bench_${n}_$v.txt | sed -E 's/ +/ /g; s/rp official s0x4.2.4hwlpfgmc //' | cut -c1-80
  [ $(( $(date +%s)-T0 )) -gt 95 ] && { echo "bench budget hit"; break; }
done
kill $CP
echo "SM MHz:"; awk -F, '{print $1}' $OUT/clk.txt | sort | uniq -c | sort -rn | head -3 | tr '\n' ';'; echo
# pipes of the microbenchmark's kernels (one launch each)
t=$(date +%s)
F2FP_ONCE=1 timeout 35 ncu --clock-control none --set full -k regex:"op_rate|word_rate" -f -o /tmp/ncu_f2fp $B/f2fp_rate > /tmp/ncu_f2fp_log.txt 2>&1
echo "ncu rc=$? $(( $(date +%s)-t ))s"; grep -E "==ERROR==" /tmp/ncu_f2fp_log.txt | head -3
ncu -i /tmp/ncu_f2fp.ncu-rep --page raw --csv > /tmp/raw_f2fp.csv 2>&1
python3 bench/kernels/results/2026-11-27_s15_moe20_pipes.py /tmp/raw_f2fp.csv > $OUT/ncu_pipes.txt 2>&1
grep -E "^==|pipe_(alu|fma|fmaheavy|fmalite|fp16|xu|tensor|uniform)|issue_active" $OUT/ncu_pipes.txt | sed -E 's/ +/ /g' | cut -c1-120
echo "total $(( $(date +%s)-T0 ))s"
