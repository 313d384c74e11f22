#!/usr/bin/env bash
# Session 42, call l42a (H200): at T = 1, 4 scale slots for W1/W3 alone ("k1": W2 keeps W2P on 8 slots) against the
# default and against 4 slots for both ("q1"), on this tree (session 41's partial-sums-in-the-ring patch applied: static
# shared memory of the RT 2 kernels 2 KB less, so Pro's W1/W3 with its 14 KB staged x and 4 slots fits 4 blocks per SM);
# "ka" = the rule (4 slots where they add a resident block and the 8-slot grid is more than one wave: Pro, not Flash).
# bench_moe_linear_old = main's binary (0a09b64): the default and q1 (session 41's unrun l41f). Alternated twice, full
# clock, MXFP4 and NVFP4, Flash and Pro.
set -uo pipefail
nvidia-smi -L
N=l42a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
D=s0x4.2.4hwlpfgmcqaya
for pass in 1 2; do
  timeout -s KILL 100 $G/bench_moe_linear_old --decode-ab --ab-official --ab $D,s0x4.2.4hwlpfgmcq1ya --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/old_$pass.txt 2>&1
  echo "== old pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/old_$pass.txt | cut -c1-200
  timeout -s KILL 140 $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}k1,s0x4.2.4hwlpfgmcq1ya,${D}ka --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/new_$pass.txt 2>&1
  echo "== new pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/new_$pass.txt | cut -c1-200
  save
done
echo "done t=$(el)"
