#!/usr/bin/env bash
# IDX33 (session 21) device call 1: the fast list kernel's weights by cp.async into shared memory,
# and the 32-bit block range alone (indexer T=1 x 256K FP4 keys).
# Binaries (wip/idx33 fa1da68, the header's switch defaults changed per build):
#   base = main 3b95f5d's bench_attention (/work/main/build-cuda);
#   w    = DSV4_IDX33_WSMEM=1 (bf16 weights: 4-byte cp.async into the w_pairs slot after the query's
#          copies, same group; LDS after the barrier): 121 regs, bf16 loop opcodes = main;
#   w2   = WSMEM=2 (the same copies issued right after the early return): 121 regs, loop = main;
#   d    = DSV4_IDX33_DIV32=1 (32-bit block range): 118 regs, loop rescheduled;
#   wd   = WSMEM=1 + DIV32.
# 1. base w w2 d wd --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other round;
#    --indexer-chain twice each (reversed).
# 2. parity in parallel: five families + indexer_fast_fp4 for w w2 d wd; test_gpu_model (wd, one).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
A=.bin/idx33/idx33_r1.tar.xz
G=build-gpu-idx33; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
echo "extracted t+$(el)"
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
L=/tmp/idx33_logs; rm -rf $L; mkdir -p $L/parity
P=$L/parity
# parity in the background from the start (the benches use one GPU kernel at a time; the parity
# processes would perturb timings, so they start after the benches: see below)
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
  if [ $((r % 2)) = 1 ]; then order="base w w2 d wd"; else order="wd d w2 w base"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 40 ] || break
done
for x in base w w2 d wd wd d w2 w base; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base w w2 d wd; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
lim=$(( 165 - $(el) )); [ $lim -gt 150 ] && lim=150; [ $lim -lt 30 ] && lim=30
echo "parity limit ${lim}s"
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
for v in w w2 d wd; do
  p ${v}_fp4_long test_backend_ops_$v --filter indexer_fast_fp4 &
  p ${v}_families test_backend_ops_$v --filter $F &
done
p wd_gpu_model test_gpu_model_wd &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx33_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
