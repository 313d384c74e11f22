#!/usr/bin/env bash
# IDX31 (session 21) device call 1: the fast list kernel's prologue (indexer T=1 x 256K FP4 keys).
# Binaries (wip/idx31 94cde65, the header's switch defaults changed per build):
#   base = main 887a1c9's bench_attention (/work/main/build-cuda);
#   v2   = DSV4_IDX31_ISSUE=2 (thread j issues pass j, j < 2, from the pass table entry it computed);
#   v1d  = ISSUE=1 (thread j issues pass j from its table entry after the query's copies) + DIV32;
#   v2d  = ISSUE=2 + DIV32 (the block range by 32-bit divisions);
#   v2dw = v2d + WEARLY (weights loaded after the early return; the bf16 loop rescheduled);
#   dgbase / dgv2d = DSV4_IDX29_STAMPS=1 on main's code / on v2d (128 registers: prologue only).
# 1. account: dgbase, dgv2d --indexer-plan-only --indexer-prologue, alternated, 2 processes each.
# 2. base v2 v1d v2d v2dw --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other
#    round; --indexer-chain twice each (reversed).
# 3. parity in parallel (v1d, v2d, v2dw): five families, indexer_fast_fp4, test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
A=.bin/idx31/idx31_r1.tar.xz
G=build-gpu-idx31; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
echo "extracted t+$(el)"
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
L=/tmp/idx31_logs; rm -rf $L; mkdir -p $L/parity
for i in 1 2; do for d in dgbase dgv2d; do
  timeout 30 $G/bench_attention_$d --indexer-plan-only --indexer-prologue --no-ceilings > $L/${d}_$i.txt 2>&1
  echo "$d $i rc$? t+$(el)"
done; done
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
  if [ $((r % 2)) = 1 ]; then order="base v2 v1d v2d v2dw"; else order="v2dw v2d v1d v2 base"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 45 ] || break
done
for x in base v2 v1d v2d v2dw v2dw v2d v1d v2 base; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base v2 v1d v2d v2dw; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 174 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
echo "parity limit ${lim}s"
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
for v in v2d v1d v2dw; do
  p ${v}_fp4_long test_backend_ops_$v --filter indexer_fast_fp4 &
  p ${v}_families test_backend_ops_$v --filter $F &
  p ${v}_gpu_model test_gpu_model_$v &
done
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx31_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
