#!/usr/bin/env bash
# Session 19 ATTN28 call 2: TMA key tiles in the attention decode ws kernel, paged parts only (no
# per-tile run check), tensor-map prefetch; plus the maps' L2 promotion 0 / 128 (env, one steps run
# each). Parity of the attention
# families (each ws case also bit for bit against every tile by cp.async, plan.diag 16) and
# test_gpu_model, then bench_attention --steps on HCA 1M T=8/16/32, HCA 128K T=32, Flash CSA T=32
# (new / main / main / new) and --focus (new / main / new / main); main = /work/main/build-cuda 4a2dd45.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-attn28; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/attn28/attn28_r2.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 100 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
timeout 100 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $OUT/parity.txt 2>&1; echo "parity rc=$? t=$(el)"
wait
echo "== parity: $(grep -c ' OK' $OUT/parity.txt) OK, $(grep -c FAIL $OUT/parity.txt) FAIL; $(grep -E 'passed' $OUT/parity.txt | tail -1)"
grep FAIL $OUT/parity.txt | head -5 | cut -c1-250
grep -c "runs" $OUT/parity.txt | sed 's/^/runs cases: /'
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt) t=$(el)"
C="8,64,hca,1048576,0;16,64,hca,1048576,0;32,64,hca,1048576,0;32,64,hca,131072,0;32,64,csa,1048576,512"
r=0
for n in new base base new; do
  r=$((r+1)); bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  [ $(el) -lt 150 ] || { echo "skip steps $n r$r (time)"; continue; }
  timeout 45 $bin --steps --cases "$C" > $OUT/steps_${n}_r$r.txt 2>&1; echo "steps $n r$r rc=$? t=$(el)"
  grep -E "^  plan S.* graph  |^  plan S.* graph r2|variants|ring v|^  v (tma|ldgsts) S|ldgsts out" $OUT/steps_${n}_r$r.txt | sed -E 's/ +/ /g' | cut -c1-150
done
for pr in 0 128; do
  [ $(el) -lt 150 ] || { echo "skip promo $pr (time)"; continue; }
  DSV4_ATTN28_PROMO=$pr timeout 45 $G/bench_attention --steps --cases "$C" > $OUT/steps_promo$pr.txt 2>&1; echo "steps promo$pr rc=$? t=$(el)"
  grep -E "variants|ring v tma" $OUT/steps_promo$pr.txt | sed -E 's/ +/ /g' | cut -c1-150
done
for n in new base new base; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  [ $(el) -lt 178 ] || { echo "skip focus $n (time)"; continue; }
  timeout 30 $bin --focus > $OUT/cur.txt 2>&1; echo "focus $n rc=$? t=$(el)"; cat $OUT/cur.txt >> $OUT/focus_$n.txt
  echo "   $(grep -E '^  plan' $OUT/cur.txt | awk '{printf "%s ", $(NF-3)}')"
done; rm -f $OUT/cur.txt
echo "done t=$(el)"; ls $OUT
