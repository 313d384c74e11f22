#!/usr/bin/env bash
# Session 38 lead, call l38h (H200): W2P off against on at T = 5 / 6 / 7 (Flash / Pro, official bf16 MXFP4, full clock),
# where the default (from T = 8) was not measured; l38f's binary.
set -uo pipefail
nvidia-smi -L
N=l38f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l38h; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l38h_logs.tgz -C $L . 2>/dev/null; }
S=s0x4.2.4hwlpfgmc
timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y1 --shapes flash,pro --formats mxfp4 --tokens 5,6,7 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock.txt | cut -c1-200; save
