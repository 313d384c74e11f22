#!/usr/bin/env bash
# Session 38 lead, call l38g (H200): NVFP4 with W2P (default from T = 8) against W2P off at the full clock, Flash / Pro,
# T = 1 / 4 / 8 / 16 / 64 (l38f's binary: the final tree's kernels).
set -uo pipefail
nvidia-smi -L
N=l38f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l38g; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l38g_logs.tgz -C $L . 2>/dev/null; }
S=s0x4.2.4hwlpfgmc
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y8 --shapes flash,pro --formats nvfp4 --tokens 1,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/fullclock_nvfp4.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock_nvfp4.txt | cut -c1-200; save
