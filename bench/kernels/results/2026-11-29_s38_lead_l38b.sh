#!/usr/bin/env bash
# Session 38 lead, call l38b (H200): main's W4A8 prefill path (FP8 wgmma, A expanded in registers) at decode
# token counts (Flash T = 16 / 64, Pro T = 64), against the bytes bound the bench prints: how far an FP8-wgmma core
# built for prefill is from the read ceiling where the decode GEMMs run (l38a's binary; its prefill code is main's).
set -uo pipefail
nvidia-smi -L
N=l38a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l38b; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l38b_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/bench_moe_linear --w4a8-ab --w4a8-flash-t 64,16 --w4a8-pro-t 64 --ab-passes 2 > $L/w4a8_small_t.txt 2>&1
echo "rc=$?"; grep -vE "^\s*$" $L/w4a8_small_t.txt | cut -c1-220 | tail -60; save
