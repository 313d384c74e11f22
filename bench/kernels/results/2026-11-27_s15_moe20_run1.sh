#!/usr/bin/env bash
# MOE20 call 1 (session 15): ncu stall/pipe profile of main's engine W1/W3 + W2 at Flash T=16,
# A/B main vs a1 (W2 two accumulator sets) vs a2 (all ring kernels), parity of a2, ncu of a2.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
R=$PWD; W=$R/.wt/moe20
B=/tmp/b20; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt; ncu --version | tail -1
T0=$(date +%s)
el(){ echo $(( $(date +%s)-T0 )); }
prof(){ # $1 = variant
  local v=$1
  timeout 40 ncu --clock-control none --set full --import-source no -k regex:moe_decode_gemm -c 2 -f -o /tmp/ncu_$v \
    $B/$v/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 16 --replays 3 > /tmp/ncu_log_$v.txt 2>&1
  echo "ncu $v rc=$? t=$(el)s"; grep -E "==PROF==|==ERROR==" /tmp/ncu_log_$v.txt | head -3
  ncu -i /tmp/ncu_$v.ncu-rep --page source --csv --print-source sass > /tmp/src_$v.csv 2>/dev/null
  python3 $R/scripts/ncu_split_source.py /tmp/src_$v.csv /tmp/src_$v
  for f in /tmp/src_${v}_k*.csv; do python3 $R/scripts/ncu_source_top.py $f > $f.top 2>&1; done
  # one summary file per variant: every split part (kernels appear more than once)
  for f in /tmp/src_${v}_k*.csv.top; do echo "### $f"; cat $f; done > $OUT/src_top_$v.txt
  for f in /tmp/src_${v}_k*.csv.top; do echo "## $f"; sed -n 2,4p $f | cut -c1-700; done
  ncu -i /tmp/ncu_$v.ncu-rep --page raw --csv > /tmp/raw_$v.csv 2>&1
  python3 $W/pipes.py /tmp/raw_$v.csv > $OUT/pipes_$v.txt 2>&1; cat $OUT/pipes_$v.txt
  ncu -i /tmp/ncu_$v.ncu-rep --page details > /tmp/det_$v.txt 2>&1
  grep -E "Duration|Issue Slots Busy|Issued Warp Per|Eligible Warps|No Eligible|highest-utilized|Registers Per|SM Frequency" /tmp/det_$v.txt | cut -c1-140 > $OUT/details_$v.txt; cat $OUT/details_$v.txt
}
echo "=== 1. ncu main"; prof main
echo "=== 2. A/B benches t=$(el)s"
A="--decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15"
n=0; TB=$(date +%s)
for v in main a1 a2 main a2 a1 main a1 a2; do
  n=$((n+1)); t=$(date +%s)
  timeout 20 $B/$v/bench_moe_linear $A > /tmp/bench_${n}_$v.txt 2>&1; rc=$?
  cat /tmp/bench_${n}_$v.txt >> $OUT/bench_$v.txt
  echo "== $n $v rc=$rc $(( $(date +%s)-t ))s"
  grep -E "read-only kernel  4096|bf16 " /tmp/bench_${n}_$v.txt | sed -E 's/ +/ /g; s/rp official s0x4.2.4hwlpfgmc //' | cut -c1-80
  [ $(( $(date +%s)-TB )) -gt 60 ] && { echo "bench budget hit"; break; }
done
echo "=== 3. parity a2 t=$(el)s"
P=$B/a2/test_backend_ops
timeout 40 stdbuf -oL $P --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_rt2_chain383,moe_decode_official_repacked_rt8_chain383,moe_decode_official_repacked_xs_chain383,moe_decode_repacked_chain31,moe_decode_official_repacked_xs,moe_decode_official > $OUT/parity_c383.txt 2>&1 &
timeout 40 stdbuf -oL $P --filter moe_decode_official_repacked > $OUT/parity_orp.txt 2>&1 &
timeout 40 stdbuf -oL $P --filter moe_decode_repacked > $OUT/parity_rp.txt 2>&1 &
timeout 40 stdbuf -oL $P --filter moe_decode > $OUT/parity_cp.txt 2>&1 &
wait
for f in c383 orp rp cp; do echo "parity $f: $(grep -c ' OK' $OUT/parity_$f.txt) OK, $(grep -c 'FAIL' $OUT/parity_$f.txt) FAIL; $(grep -E 'cases passed' $OUT/parity_$f.txt)"; grep FAIL $OUT/parity_$f.txt | head -3; done
echo "=== 4. ncu a2 t=$(el)s"
[ $(el) -lt 115 ] && prof a2
echo "total $(el)s"
