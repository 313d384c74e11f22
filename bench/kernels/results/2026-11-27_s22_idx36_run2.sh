#!/usr/bin/env bash
# IDX36 (session 22) run 2, prepared for the lead (NOT RUN by IDX36): main vs wip/idx36 (clean
# compact list_rank ranking, d09aa8e) vs wip/idx36-next (+ a power-of-two block size's row by a
# shift, 5723cd7; the branch tip has the same tree), T=1 x 256K FP4. ~130 s expected.
# 1. --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other round; --indexer-chain
#    base clean next next clean base.  2. parity: families + indexer_fast_fp4 (background) for clean
#    and next; test_gpu_model (next, one process).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-idx36r2; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/idx36/idx36_r2.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx36r2_logs; rm -rf $L; mkdir -p $L/parity
summ() { echo "$(grep -E "ceiling|floor" $1 | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $1 | awk '{printf "%s ", $(NF-3)}')"; }
bench() {  # tag round
  local tag=$1 r=$2 extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  timeout 25 $G/bench_attention_$tag --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt; echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {
  echo "== chain $1 t+$(el)" >> $L/chain.txt
  timeout 25 $G/bench_attention_$1 --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $1 rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base clean next"; else order="next clean base"; fi
  for x in $order; do bench $x $r; done
done
for x in base clean next next clean base; do chain $x; done
rm -f $L/cur.txt
med() { grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'; }
for x in base clean next; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
for x in base clean next; do
  echo "== select trace $x (first process, score_list)"
  awk '/^== .* r1 /{n++} n==1' $L/bench_$x.txt | grep -E "indexer phase trace|trace score_list|select (wait done|F|end) \(" | head -12
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 150 ] && lim=150; [ $lim -lt 60 ] && lim=60; echo "parity limit ${lim}s"
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p clean_fp4 test_backend_ops_clean --filter indexer_fast_fp4 &
p next_fp4 test_backend_ops_next --filter indexer_fast_fp4 &
p clean_families test_backend_ops_clean --filter $F &
p next_families test_backend_ops_next --filter $F &
p next_gpu_model test_gpu_model_next &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx36_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT; echo "done t+$(el)"
