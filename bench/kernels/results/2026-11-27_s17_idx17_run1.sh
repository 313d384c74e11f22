#!/usr/bin/env bash
# IDX17 (session 17) device call: the score_list CTA's histogram flush. main = main 2d9709d's
# bench_attention (/work/main/build-cuda); v0..v3 = wip/idx17's bench_attention with
# DSV4_IDX17_FLUSH=0 (main's loop) / 1 (unrolled: 16 LDS first, predicated REDs off one base) /
# 2 (1 + coarse sums by shuffles, no second shared pass) / 3 (LDS.128 of 4 neighbouring bins +
# coarse by a 4-lane reduce-scatter). --indexer-plan-only; round 1 top-512 only (DSV4_IDX16_K512)
# with the trace, round 2 reversed with top-1024 too. Then parity: the list family under each
# variant (+ the new histogram check) and the three family, in parallel.
# Carried: .wt/idx17 (bins.tar.xz, this script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx17/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
summ() {  # the plan rows, the trace's key lines
  sed '/trace collect launch/,$d' "$1" | grep -E "ceiling|floor|^  fp4 plan|^    scores|score (loop end|flushed|snapshot) max|select end max|waited - loop|flushed - waited|snapshot - |nonzero bins|warps with|most in one|lowest nonzero|highest nonzero|listed candidates" | sed 's/  */ /g'
}
run() {  # name round env... (binary: main or ours)
  local n=$1 r=$2; shift 2
  local bin=$B/bench_attention
  [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 12)) -le 62 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s $*" >>$OUT/bench_$n.txt
  env "$@" timeout 12 $bin --indexer-plan-only --indexer-trace $ARGS >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "== $n r$r rc $rc t+$(el)s $*"
  if [ "$r" = 1 ]; then summ $OUT/cur.txt; else grep -E "^  fp4 plan" $OUT/cur.txt | sed 's/  */ /g'; fi
}
ARGS=""
run main 1 DSV4_IDX16_K512=1
ARGS="--no-ceilings"
for v in 0 1 2 3; do run v$v 1 DSV4_IDX16_K512=1 DSV4_IDX17_FLUSH=$v; done
for v in 3 2 1 0; do run v$v 2 DSV4_IDX17_FLUSH=$v; done
run main 2 X=0
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
for v in 0 1 2 3; do
  DSV4_IDX17_FLUSH=$v timeout 75 $B/test_backend_ops --filter indexer_fast_fp4_list >/tmp/pl_$v.txt 2>&1 &
done
timeout 75 $B/test_backend_ops --filter indexer_fast_fp4_three >$OUT/parity_three.txt 2>&1 &
wait
for v in 0 1 2 3; do
  { echo "== DSV4_IDX17_FLUSH=$v"; cat /tmp/pl_$v.txt; } >>$OUT/parity_list.txt
  echo "== list v$v: $(grep -cE " OK" /tmp/pl_$v.txt) OK, $(grep -cE "FAIL" /tmp/pl_$v.txt) FAIL; $(tail -1 /tmp/pl_$v.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/pl_$v.txt | head -3 | cut -c1-300
done
echo "== three: $(grep -cE " OK" $OUT/parity_three.txt) OK, $(grep -cE "FAIL" $OUT/parity_three.txt) FAIL; $(tail -1 $OUT/parity_three.txt | cut -c1-100)"
grep -E "FAIL" $OUT/parity_three.txt | head -3 | cut -c1-300
echo "== total t+$(el)s"
