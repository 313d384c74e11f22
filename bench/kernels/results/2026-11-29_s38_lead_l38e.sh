#!/usr/bin/env bash
# Session 38 lead, call l38e (H200): where W2P starts: W2P off against on at T = 8 and 12 (Flash / Pro, official bf16
# MXFP4), at the full clock (--replay-gap-ms 80) and back to back; l38d's binary (default: on from T = 16).
set -uo pipefail
nvidia-smi -L
N=l38d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l38e; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l38e_logs.tgz -C $L . 2>/dev/null; }
S=s0x4.2.4hwlpfgmc
timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y1 --shapes flash,pro --formats mxfp4 --tokens 8,12 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock.txt | cut -c1-200; save
timeout -s KILL 90 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y1,$S,${S}y1 --shapes flash,pro --formats mxfp4 --tokens 8,12 --replays 40 > $L/sustained.txt 2>&1
echo "== sustained rc=$?"; grep -E "hbm read-only kernel  4096|speed vs" $L/sustained.txt | cut -c1-220; save
