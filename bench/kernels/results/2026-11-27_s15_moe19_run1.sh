#!/usr/bin/env bash
# MOE19 call 1 (session 15): bound (DSV4_MOE17_DIAG) + A/B main vs v1 (x loads after round j's
# first HMMAs) + parity of v1. Binaries: .wt/moe19/bins.tar.xz (commit.txt).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b19; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe19/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
A="--decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 500 >$OUT/clk.txt 2>&1 &
CP=$!
T0=$(date +%s)
n=0
for v in main v1 diag main v1 main v1; do
  n=$((n+1)); t=$(date +%s)
  timeout 22 $B/$v/bench_moe_linear $A > /tmp/bench_${n}_$v.txt 2>&1; rc=$?
  cat /tmp/bench_${n}_$v.txt >> $OUT/bench_$v.txt
  echo "== $n $v rc=$rc $(( $(date +%s)-t ))s"
  grep -E "read-only kernel  4096|bf16 " /tmp/bench_${n}_$v.txt | sed -E 's/ +/ /g; s/rp official s0x4.2.4hwlpfgmc //' | cut -c1-80
  [ $(( $(date +%s)-T0 )) -gt 100 ] && { echo "bench budget hit"; break; }
done
kill $CP
echo "SM MHz:"; awk -F, '{print $1}' $OUT/clk.txt | sort | uniq -c | sort -rn | head -3 | tr '\n' ';'; echo
# parity of v1 (bit-equal change: every ring instantiation's unstaged path), groups in parallel
P=$B/v1/test_backend_ops
timeout 45 stdbuf -oL $P --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_rt2_chain383,moe_decode_official_repacked_rt8_chain383,moe_decode_official_repacked_xs_chain383,moe_decode_repacked_chain31,moe_decode_official_repacked_xs,moe_decode_official > $OUT/parity_c383.txt 2>&1 &
timeout 45 stdbuf -oL $P --filter moe_decode_official_repacked > $OUT/parity_orp.txt 2>&1 &
timeout 45 stdbuf -oL $P --filter moe_decode_repacked > $OUT/parity_rp.txt 2>&1 &
wait
for f in c383 orp rp; do echo "parity $f: $(grep -c ' OK' $OUT/parity_$f.txt) OK, $(grep -c 'FAIL' $OUT/parity_$f.txt) FAIL; $(grep -E 'cases passed' $OUT/parity_$f.txt)"; grep FAIL $OUT/parity_$f.txt | head -3; done
echo "total $(( $(date +%s)-T0 ))s"
