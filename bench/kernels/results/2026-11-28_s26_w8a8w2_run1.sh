#!/usr/bin/env bash
# W8A8W2 (session 26 helper, second round) device call 1 (H200 asked): where the wgmma W8A8 linear's
# small-matrix floor goes (branch wip/w8a8w2 6884909, diagnostic build; base = /work/base26 = main a153b30).
# 1. parity, in parallel (timings not taken here): test_backend_ops --filter linear_w8a8_wgmma with
#    DSV4_W8A8_WGMMA_RED=2 (the candidate hand-off: batched part loads + one acq_rel atomic), the same
#    with RED=1 (first 40 cases), test_gpu_model --only-w8a8-wgmma with RED=2;
# 2. bench_linear_gemm --w8a8-stamps: in-kernel stamps (reduce 3) per CTA, 16-call graphs, with and
#    without the quantize launch, every FP8 projection at T = 9 / 32;
# 3. bench_linear_gemm --w8a8-floor 2: reduce 0 (main's kernel, SASS-identical) / 1 / 2 / 2 without
#    the quantize launch at the default K split, and K parts 1..16 under reduce 0 / 2 / 2-noq,
#    T = 9 16 17 32 64, alternating in one process, small matrices first;
# 4. main's binary vs this one, --w8a8-wgmma 1 on fl.wq_a and fl.sh_w13 (same-call baseline).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/w8a8w2/w8a8w2_r1.tar.xz
G=build-gpu-w8a8w2; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/w8a8w2_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/w8a8w2_logs.tgz -C $L . 2>/dev/null; }
lim() { local l=$(( 142 - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 3 ] && l=3; echo $l; }  # lim CAP
psum() { echo "== $1: $(grep -c ' OK' $L/$1.txt) OK, $(grep -c FAIL $L/$1.txt) FAIL; $(grep -E 'passed|failed' $L/$1.txt | tail -1 | cut -c1-100); $(tail -1 $L/$1.txt)"; grep FAIL $L/$1.txt | head -6 | cut -c1-240; }
echo "extracted t+$(el)"
( DSV4_W8A8_WGMMA_RED=2 timeout 58 $G/test_backend_ops --filter linear_w8a8_wgmma > $L/parity_red2.txt 2>&1; echo "exit $?" >> $L/parity_red2.txt ) &
( DSV4_W8A8_WGMMA_RED=1 timeout 58 $G/test_backend_ops --filter linear_w8a8_wgmma --per-op 40 > $L/parity_red1.txt 2>&1; echo "exit $?" >> $L/parity_red1.txt ) &
( DSV4_W8A8_WGMMA_RED=2 timeout 58 $G/test_gpu_model --only-w8a8-wgmma > $L/gpu_model_red2.txt 2>&1; echo "exit $?" >> $L/gpu_model_red2.txt ) &
wait
psum parity_red2; psum parity_red1
grep -E 'gpu-w8a8-wgmma|passed|failed|exit' $L/gpu_model_red2.txt | cut -c1-240
echo "parity done t+$(el)"; save
timeout $(lim 20) $G/bench_linear_gemm --w8a8-stamps > $L/stamps.txt 2>&1; echo "stamps rc=$? t+$(el)"
grep -E '^stamps' $L/stamps.txt | sed -E 's/ +/ /g' | cut -c1-230; save
timeout $(lim 62) $G/bench_linear_gemm --w8a8-floor 2 > $L/floor.txt 2>&1; echo "floor rc=$? t+$(el)"
grep -E 'ceiling' $L/floor.txt | head -2
grep -E '^floor|^  sweep' $L/floor.txt | sed -E 's/ +/ /g' | cut -c1-260; save
for sh in fl.wq_a fl.sh_w13; do
  [ $(el) -lt 132 ] || break
  timeout $(lim 8) $G/bench_linear_gemm_base --w8a8-wgmma 1 $sh > $L/base_$sh.txt 2>&1; echo "base $sh rc=$? t+$(el)"
  timeout $(lim 8) $G/bench_linear_gemm --w8a8-wgmma 1 $sh > $L/new_$sh.txt 2>&1; echo "new $sh rc=$? t+$(el)"
  grep -hE '^wgmma' $L/base_$sh.txt $L/new_$sh.txt | awk -F'|' '{print $1 "|" $2 "|" $3}' | sed -E 's/ +/ /g' | cut -c1-200
done
save; echo "done t=$(el)"; ls -la $OUT
