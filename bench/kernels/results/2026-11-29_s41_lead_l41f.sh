#!/usr/bin/env bash
# Session 41, call l41f (H200; NOT RUN: too little device time was left to start a machine): lead 1 of the session's notes as an A/B with
# no code change: 4 scale slots from T = 1 (q1) against the default (qa: 4 slots at T = 2..4 on the H200 class), T = 1,
# this tree's bench binary (bb6bcb0's kernels), full clock, MXFP4 and NVFP4.
set -uo pipefail
nvidia-smi -L
N=l41f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 80 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya,s0x4.2.4hwlpfgmcq1ya --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/ab_q1.txt 2>&1
echo "== rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/ab_q1.txt | cut -c1-200
save; echo done
