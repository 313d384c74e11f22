#!/usr/bin/env bash
# Session 39 lead, call l39c (H200): W1/W3 occupancy and row tiles at T = 1..8 (l39b traces: at Flash T = 4 W1/W3 runs
# 3 blocks/SM at RT 4, 1.7 waves of ~28 us blocks, W2 mostly after it). x0.2.4: W1/W3 not staged (no dynamic shared
# memory: 4 blocks/SM); s-20 / s-10: W1/W3 at RT 2 / 1; q2: 4 scale slots from T = 2 (4 blocks/SM with the staged row).
# Official bf16 MXFP4, full clock (80 ms idle before each replay), two alternating passes; l39a's binary (c7e1431).
set -uo pipefail
nvidia-smi -L
N=l39a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l39c; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l39c_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcy5,s0x0.2.4hwlpfgmcy5,s-20x4.2.4hwlpfgmcy5,s-20x0.2.4hwlpfgmcy5,s-10x0.2.4hwlpfgmcy5,s0x4.2.4hwlpfgmcq2y5
timeout -s KILL 400 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4 --tokens 1,2,3,4,8 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock.txt | cut -c1-420; save
