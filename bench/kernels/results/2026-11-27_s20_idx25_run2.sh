#!/usr/bin/env bash
# IDX25 (session 20) device call 2: A/B of the score_list tail against main a0411a2's bench_attention
# (_base, indexer code of b6cea3f). Binaries: n = wip/idx25 4284d87 (DSV4_IDX25 bits: 2 first
# snapshot before the CTA's flush, with the fine window; 4 one list append per CTA), ei = n + passes
# 0..1 issued before the pass table and the query (fast kernel only). Configs main n0 n2 n4 n6 e0 e6,
# 4 rounds, order reversed every other round; --indexer-plan-only --indexer-trace; chained rows; then
# parity (list + three under every variant, indexer_fast + _fp8, test_gpu_model, indexer_fast_fp4).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx25/idx25_r2.tar.xz
G=build-gpu-idx25; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx25_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
}
bench() {  # tag round
  local tag=$1 r=$2 bin=$G/bench_attention bits=${1:1}
  case $tag in main) bin=$G/bench_attention_base; bits=0;; e*) bin=$G/bench_attention_ei;; esac
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  DSV4_IDX25=$bits timeout 25 $bin --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {  # tag
  local tag=$1 bin=$G/bench_attention bits=${1:1}
  case $tag in main) bin=$G/bench_attention_base; bits=0;; e*) bin=$G/bench_attention_ei;; esac
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  DSV4_IDX25=$bits timeout 20 $bin --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="main n0 n2 n4 n6 e0 e6"; else order="e6 e0 n6 n4 n2 n0 main"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 45 ] || break
done
for x in main n0 e6 n6 main n0 e6 n6; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in main n0 n2 n4 n6 e0 e6; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 150 ] && lim=150; [ $lim -lt 30 ] && lim=30
p() { local tag=$1 bits=$2 bin=$3; shift 3; DSV4_IDX25=$bits timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p e6_fp4_long 6 test_backend_ops_ei --filter indexer_fast_fp4 &
p n0_list_three 0 test_backend_ops --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
p n2_list 2 test_backend_ops --filter indexer_fast_fp4_list &
p n4_list 4 test_backend_ops --filter indexer_fast_fp4_list &
p n6_list_three 6 test_backend_ops --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
p e0_list_three 0 test_backend_ops_ei --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
p e6_list_three_fast 6 test_backend_ops_ei --filter indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fast,indexer_fast_fp8 &
p e6_gpu_model 6 test_gpu_model_ei &
p n0_gpu_model 0 test_gpu_model &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx25_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
