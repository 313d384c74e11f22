#!/usr/bin/env bash
# IDX27 (session 21) device call 1: the fast list kernel's prologue (indexer T=1 x 256K FP4 keys).
# Binaries: base = main 462a085 (build-final) bench_attention; pf1 = wip/idx27 4b227b6 (prefetch.L1 of
# n_visible[t], token_seq[t], table row t's block ids of the CTA's range, the weights; the query into
# L2, at the score kernel's entry); pf2 = the same with prefetch.L2 everywhere; z = 912a0d5 (pf1 + the
# zeroing kernel prefetching those into L2 before the score kernel starts).
# Benches first (alone on the GPU): --indexer-plan-only --indexer-trace, 4 rounds, order reversed
# every other round; --indexer-chain x2 each. Then parity in parallel: z (its score kernel is
# SASS-identical to pf1's) and pf2 (test_gpu_model: z only; the archive must stay small).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx27/idx27_r1.tar.xz
G=build-gpu-idx27; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx27_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
}
bench() {  # tag round
  local tag=$1 r=$2 bin=$G/bench_attention_$1
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  timeout 25 $bin --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {  # tag
  local tag=$1 bin=$G/bench_attention_$1
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  timeout 20 $bin --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base pf1 pf2 z"; else order="z pf2 pf1 base"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 40 ] || break
done
for x in base pf1 pf2 z z pf2 pf1 base; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base pf1 pf2 z; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p z_fp4_long test_backend_ops_z --filter indexer_fast_fp4 &
p pf2_fp4_long test_backend_ops_pf2 --filter indexer_fast_fp4 &
p z_families test_backend_ops_z --filter $F &
p pf2_families test_backend_ops_pf2 --filter $F &
p z_gpu_model test_gpu_model_z &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx27_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
