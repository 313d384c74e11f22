#!/usr/bin/env bash
# Session 40 lead, call l40b (H200): decode_w4a8_probe (bench/kernels/decode_w4a8_probe.cu), the decode's weight stream
# with E4M3 expansion + FP8 wgmma against the engine's BF16 round on the same bytes, Flash and Pro W1|W3-sized
# matrices (ring depth 4 / 8, 2 or 3 warpgroups), the 25 MB W2 of T = 1 from HBM and L2-resident, ceilings of one launch and of a 2 GiB stream; SASS.
set -uo pipefail
nvidia-smi -L
N=l40b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
cuobjdump -sass $G/decode_w4a8_probe > $L/probe_sass.txt 2>&1; xz -T4 -f $L/probe_sass.txt
for s in flash pro w2; do
  timeout -s KILL 200 $G/decode_w4a8_probe $s > $L/probe_$s.txt 2>&1; echo "== probe $s rc=$? t=$(el)"; cat $L/probe_$s.txt; save
done
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >> $L/probe_flash.txt 2>&1
save; echo "done t=$(el)"
