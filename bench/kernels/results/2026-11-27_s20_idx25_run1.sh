#!/usr/bin/env bash
# IDX25 (session 20) device call 1: the time account of T=1 x 256K FP4 top-512 / top-1024
# (--indexer-trace with the new stamps: per-stamp first / median / last CTA, the zeroing kernel, the
# CTA that ends last) and a first cut (DSV4_IDX25 bits: 1 fine window read with the snapshot,
# 2 passes issued before the query; default 3). Processes alternated: main a0411a2's bench_attention
# (_base, indexer code of b6cea3f) / new (3) / off (0) / w1 (1); chained rows (8 calls per graph);
# then parity of the families the change touches and test_gpu_model. Outputs in one archive.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx25/idx25_r1.tar.xz
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
  local tag=$1 r=$2 bin=$G/bench_attention bits=3
  case $tag in main) bin=$G/bench_attention_base;; off) bits=0;; w1) bits=1;; esac
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  DSV4_IDX25=$bits timeout 25 $bin --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {  # tag
  local tag=$1 bin=$G/bench_attention; [ $tag = main ] && bin=$G/bench_attention_base
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  DSV4_IDX25=3 timeout 20 $bin --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/ +/ /g' | tr '\n' ';')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="main new off w1"; else order="w1 off new main"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 75 ] || break
done
for x in main new main new; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in main new off w1; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 100 ] && lim=100; [ $lim -lt 30 ] && lim=30
p() { local tag=$1 bits=$2; shift 2; DSV4_IDX25=$bits timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p list_three 3 --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
p list_w1 1 --filter indexer_fast_fp4_list &
p bf16_fp8 3 --filter indexer_fast,indexer_fast_fp8 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx25_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
