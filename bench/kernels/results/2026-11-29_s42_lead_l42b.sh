#!/usr/bin/env bash
# Session 42, call l42b (H200): l42a showed the partial-sums-in-the-ring patch alone 0.974-0.98x at Pro T = 1 (W2's
# static shared memory 2 KB less: 4 W2 blocks per SM there, not 3) and with "ka" (W1/W3 alone on 4 slots where that adds
# a resident block: Pro T = 1) 1.02-1.06x. Here the patch on W1/W3 only (bench_moe_linear_up; W2 as on main) against
# it on both (bench_moe_linear) and main (bench_moe_linear_old, 0a09b64): Pro T = 1, MXFP4 / NVFP4, alternated twice.
set -uo pipefail
nvidia-smi -L
N=l42b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
D=s0x4.2.4hwlpfgmcqaya
for pass in 1 2; do
  for b in bench_moe_linear_old:$D bench_moe_linear:${D}ka bench_moe_linear_up:$D,${D}ka; do
    timeout -s KILL 100 $G/${b%%:*} --decode-ab --ab-official --ab ${b#*:} --shapes pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/${b%%:*}_$pass.txt 2>&1
    echo "== ${b%%:*} pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/${b%%:*}_$pass.txt | cut -c1-200
  done
  save
done
echo "done t=$(el)"
