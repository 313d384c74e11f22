#!/usr/bin/env bash
# Session 36 lead, call l36a (H200). Binaries: bench_moe_linear of lead-s36 (main 9b21edd + the FP8 ceilings at the
# experts' own shapes, time_fp8_batched_ceiling); bench_linear_gemm and test_backend_ops_split of wip/s36-scale-split
# (main + session 35's linear_w8a8_wgmma whose consumers load the weight scale where items split K;
# DSV4_W8A8_WGMMA_SCALE=0 is main's producer chunk copies, 1 the consumers' loads, unset the branch's rule).
# 1. W4A8 prefill section with the batched FP8 ceilings (Flash 4096, Pro 4096, Flash 8192, 1024).
# 2. Parity of linear_w8a8_wgmma under the three scale modes; bench_linear_gemm --w8a8-wgmma 2, modes 0 / 1 alternating.
set -uo pipefail
nvidia-smi -L
N=l36a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 300 $G/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096,8192,1024 --w4a8-pro-t 4096 > $L/w4a8.txt 2>&1
echo "== w4a8 rc=$? t=$(el)"; grep -vE "^\s*$" $L/w4a8.txt | grep -E "batched|ceil|W4A8|W4A16|differ|NMSE|no usable|failed" | cut -c1-200; save
for m in auto 0 1; do
  if [ $m = auto ]; then unset DSV4_W8A8_WGMMA_SCALE; else export DSV4_W8A8_WGMMA_SCALE=$m; fi
  timeout -s KILL 100 $G/test_backend_ops_split --filter linear_w8a8_wgmma > $L/par_$m.txt 2>&1; echo "== parity $m t=$(el): $(grep -c ' OK' $L/par_$m.txt) OK $(grep -c FAIL $L/par_$m.txt) FAIL | $(tail -1 $L/par_$m.txt)"
done
unset DSV4_W8A8_WGMMA_SCALE; save
for r in 1 2; do for m in 0 1; do
  DSV4_W8A8_WGMMA_SCALE=$m timeout -s KILL 90 $G/bench_linear_gemm --w8a8-wgmma 2 > $L/ab_${m}_r$r.txt 2>&1
  echo "== scale $m r$r t=$(el)"; grep -E "^wgmma" $L/ab_${m}_r$r.txt | awk -F'|' '{print $1 "|" $3}' | cut -c1-110
done; done
save; echo "done t=$(el)"
