#!/usr/bin/env bash
# IDX29 (session 21) device call 1: the fast list kernel's prologue (indexer T=1 x 256K FP4 keys).
# Binaries (wip/idx29 e702666, the header's switch defaults changed per build):
#   base = main 462a085's bench_attention (build-final);
#   diag = DSV4_IDX29_STAMPS=1 (prologue stamps; 128 registers: its loop is not compared);
#   w    = DSV4_IDX29_VARIANT=1 (IDX27's variant w: cp.async.ca warm copies at entry);
#   ts   = DSV4_IDX29_VARIANT=2 (token_seq[t]'s load issued with n_visible[t]'s).
# 1. the account: diag --indexer-plan-only --indexer-prologue, 2 processes (traces: L2 not
#    flushed; flushed then the prologue's inputs read; flushed).
# 2. base / w / ts --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other round;
#    --indexer-chain base w ts ts w base.
# 3. parity in parallel (w and ts): the five families, indexer_fast_fp4, test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx29/idx29_r1.tar.xz
G=build-gpu-idx29; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx29_logs; rm -rf $L; mkdir -p $L/parity
for i in 1 2; do
  timeout 40 $G/bench_attention_diag --indexer-plan-only --indexer-prologue > $L/diag_$i.txt 2>&1
  echo "diag $i rc$? t+$(el)"
done
grep -E "^indexer phase trace|^  trace|prologue|score entry|score loop end \(|zeroing" $L/diag_1.txt | head -70
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
  if [ $((r % 2)) = 1 ]; then order="base w ts"; else order="ts w base"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 50 ] || break
done
for x in base w ts ts w base; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base w ts; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 172 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
echo "parity limit ${lim}s"
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p w_fp4_long test_backend_ops_w --filter indexer_fast_fp4 &
p ts_fp4_long test_backend_ops_ts --filter indexer_fast_fp4 &
p w_families test_backend_ops_w --filter $F &
p ts_families test_backend_ops_ts --filter $F &
p w_gpu_model test_gpu_model_w &
p ts_gpu_model test_gpu_model_ts &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx29_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
