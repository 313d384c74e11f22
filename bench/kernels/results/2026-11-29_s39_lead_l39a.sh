#!/usr/bin/env bash
# Session 39 lead, call l39a (H200): the routed-MoE decode at T = 1..4, where W2P is off by default (Flash T = 4
# 0.96x in l38c with W2's activation row staged): W2P against off, crossed with W2 staging (x4.2.4 = staged at
# T = 2..4, x4.5.4 = never at T >= 2; "g" = staged at T = 1) and W2's row tiles (s-2: RT 2, the model for W1/W3).
# Official bf16 MXFP4, Flash and Pro, full clock (80 ms idle before each replay), two alternating passes.
set -uo pipefail
nvidia-smi -L
N=l39a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l39a; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l39a_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcy5,s0x4.2.4hwlpfgmcy1,s0x4.5.4hwlpfgmcy1,s0x4.5.4hwlpfmcy1,s-2x4.2.4hwlpfgmcy1,s-2x4.5.4hwlpfgmcy1,s0x4.5.4hwlpfgmcy5
timeout -s KILL 400 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4 --tokens 1,2,3,4 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock.txt | cut -c1-220; save
