#!/usr/bin/env bash
# Session 33 lead, call l33h (H200): routed-MoE decode row tiles per block (RT) forced per GEMM
# against pick_rt's choice (fitted on the H100 in MOE7; MOE15 / l31g checked T = 1 on the H200):
# official bf16 MXFP4, Flash and Pro, T = 4 / 16 / 64, W1/W3 RT u and W2 RT d (u, d in 4, 2, 1),
# two alternating passes (bench_moe_linear --decode-ab --ab-official).
set -uo pipefail
nvidia-smi -L
N=l33h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
D=x4.2.4hwlpfgmc
AB="s0$D,s-44$D,s-42$D,s-41$D,s-24$D,s-22$D,s-21$D,s-14$D,s-12$D"
timeout -s KILL 500 $G/bench_moe_linear --decode-ab --ab-official --ab $AB --shapes flash,pro --formats mxfp4 --tokens 4,16,64 --replays 10 > $L/ab.txt 2>&1; echo "ab exit $? t=$(el)"; save
grep -v "^ *$" $L/ab.txt | tail -60 | cut -c1-180
echo "done t=$(el)"
