#!/usr/bin/env bash
# Session 38 lead, call l38f (H200): the final tree (W2P from T = 8): test_gpu_model, and the decode rows of the default
# configuration at T = 1 / 4 / 8 / 16 / 64 (official bf16 MXFP4, full clock, against W2P off).
set -uo pipefail
nvidia-smi -L
N=l38f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 170 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model: $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250; save
S=s0x4.2.4hwlpfgmc
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y8 --shapes flash,pro --formats mxfp4 --tokens 1,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/fullclock.txt | cut -c1-200; save
