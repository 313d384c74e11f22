#!/usr/bin/env bash
# Session 36 lead, call l36e (H200): the routed-MoE decode on main's kernels, same day as the parity of l36b-l36d: the
# engine's configuration (chain 383, repacked, official order, bf16 x), MXFP4 and NVFP4, Flash and Pro, T = 1 / 4 / 16 /
# 64, with the same read pattern as plain dependent reads (--short-read) as the pattern's own ceiling.
set -uo pipefail
nvidia-smi -L
N=l36e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 330 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --short-read --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 15 > $L/decode.txt 2>&1
echo "== decode rc=$? t=$(el)"; grep -vE "^\s*$" $L/decode.txt | cut -c1-200 | tail -60
save; echo "done t=$(el)"
