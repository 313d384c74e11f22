#!/usr/bin/env bash
# Session 39 lead, call l39f (H200), tree e9d48ba: W1/W3 row tiles under the new 4-slot default at T = 2..4. The row-tile
# model's occupancy query (gemm_blocks_per_sm) ran before the launch raised the kernel's dynamic shared memory limit,
# so a staged instantiation above 48 KB read 1 block per SM until it had been launched once (the 4-slot kernels: RT 4
# everywhere in l39d / l39e). Forced W1/W3 RT 4 (s-40) against RT 2 (s-20) with 4 slots (qa), and the model as it runs
# (s0), full clock, MXFP4 and NVFP4.
set -uo pipefail
nvidia-smi -L
N=l39f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcqay5,s-40x4.2.4hwlpfgmcqay5,s-20x4.2.4hwlpfgmcqay5
timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$?"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; save
