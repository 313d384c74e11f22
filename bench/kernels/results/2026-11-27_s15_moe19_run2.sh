#!/usr/bin/env bash
# MOE19 call 2 (session 15): more resident warps. A/B main / v1 / w2b5 / w2b6 / all5 (launch
# bounds min blocks: W2 5, W2 6, both 5), two passes; main and all5 also with 4 scale slots (q1:
# W1/W3 42 KB static smem, 5 blocks fit); parity (engine-path families) of the three variants.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b19b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe19/bins2.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
C="--decode-ab --ab-official --formats mxfp4 --tokens 1,4,16,64 --replays 15"
T0=$(date +%s); n=0
for pass in 1 2; do
for v in main v1 w2b5 w2b6 all5; do
  n=$((n+1)); t=$(date +%s)
  case $v in main|all5) AB="s0x4.2.4hwlpfgmc,s0x4.2.4q1hwlpfgmc";; *) AB="s0x4.2.4hwlpfgmc";; esac
  timeout 25 $B/$v/bench_moe_linear $C --ab $AB > /tmp/bench_${n}_$v.txt 2>&1; rc=$?
  cat /tmp/bench_${n}_$v.txt >> $OUT/bench2_$v.txt
  echo "== $n $v rc=$rc $(( $(date +%s)-t ))s"
  grep -E "read-only kernel  4096" /tmp/bench_${n}_$v.txt | sed -E 's/ +/ /g'
  grep -E " bf16 " /tmp/bench_${n}_$v.txt | awk '{c=$5; sub(/s0x4.2.4/,"",c); sub(/hwlpfgmc/,"",c); print $1, c, "T" $7, $9, $11}' | paste -sd'|' | cut -c1-600
  [ $(( $(date +%s)-T0 )) -gt 95 ] && { echo "bench budget hit"; break 2; }
done; done
for v in w2b5 w2b6 all5; do
  timeout 45 stdbuf -oL $B/$v/test_backend_ops --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_rt2_chain383,moe_decode_official_repacked_rt8_chain383,moe_decode_official_repacked_xs_chain383,moe_decode_official_repacked,moe_decode_repacked_q4 > $OUT/parity2_$v.txt 2>&1 &
done
wait
for v in w2b5 w2b6 all5; do echo "parity $v: $(grep -c ' OK' $OUT/parity2_$v.txt) OK, $(grep -c 'FAIL' $OUT/parity2_$v.txt) FAIL; $(grep -E 'cases passed' $OUT/parity2_$v.txt)"; grep FAIL $OUT/parity2_$v.txt | head -3; done
echo "total $(( $(date +%s)-T0 ))s"
