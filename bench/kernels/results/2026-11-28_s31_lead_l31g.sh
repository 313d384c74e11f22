#!/usr/bin/env bash
# Session 31 lead, call l31g (H200): routed-MoE decode at T = 1 / 4, W2 with more resident warps: main 395c3fe's
# bench_moe_linear (W2 ring kernels at __launch_bounds__ min 4 blocks) against a variant at min 6 blocks (<= 80
# registers), each under the default configuration and with W2 forced to RT 2 / RT 1 (one-wave grids of 768 / 1536
# blocks at Flash T = 1 instead of 384 at RT 4); alternating, two rounds.
set -uo pipefail
nvidia-smi -L
N=l31g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for b in bench_moe_linear_base bench_moe_linear; do
  echo "$b W2 ring kernels (registers, stack):"
  cuobjdump -res-usage $G/$b 2>/dev/null | grep -A1 "moe_decode_gemm_kernelILNS0_11weight_kindE1ELb0E" | grep -o "REG:[0-9]* STACK:[0-9]*" | sort | uniq -c
done
AB="s0x4.2.4hwlpfgmc,s-2x4.2.4hwlpfgmc,s-1x4.2.4hwlpfgmc"
for r in 1 2; do for b in base new; do
  bin=$G/bench_moe_linear; [ $b = base ] && bin=$G/bench_moe_linear_base
  timeout -s KILL 120 $bin --decode-ab --ab-official --ab $AB --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 15 > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
grep -h "T=1 \|T=4 " $L/ab_*_r2.txt | cut -c1-200 | head -40
echo "done t=$(el)"
