#!/usr/bin/env bash
# Session 37 call l37a (prepared in session 36, run as-is apart from N):
# bench_linear_gemm --w8a8-wgmma over every shape (Flash and Pro; the runs of
# sessions 35-36 stopped at fl.wq_a 48 tokens on a cudaMalloc inside a graph capture, fixed in 79c7017), built from
# wip/s36-scale-split + that fix: DSV4_W8A8_WGMMA_SCALE=0 (main's kernel: the producer's scale chunk copies) and 1 (the
# consumers' scale loads), alternating, two rounds. The route column is the path below wgmma (current_fp8_route).
# Pack that branch's bench_linear_gemm as .bin/$N (session 35's pack.sh layout) and carry it.
set -uo pipefail
nvidia-smi -L
N=${N:-l37a}
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do for m in 0 1; do
  DSV4_W8A8_WGMMA_SCALE=$m timeout -s KILL 100 $G/bench_linear_gemm --w8a8-wgmma 2 > $L/ab_${m}_r$r.txt 2>&1
  echo "== scale $m r$r rc=$? t=$(el)"; save
done; done
for m in 0 1; do echo "== scale $m r2"; grep -E "^wgmma" $L/ab_${m}_r2.txt | awk -F'|' '{print $1 "|" $2 "|" $3}' | cut -c1-125; done
tail -2 $L/ab_1_r2.txt
save; echo "done t=$(el)"
