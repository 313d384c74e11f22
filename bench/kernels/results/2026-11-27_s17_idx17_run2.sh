#!/usr/bin/env bash
# IDX17 (session 17) device call 2: main = main 2d9709d's bench_attention; vN = wip/idx17 4744e5a's
# with DSV4_IDX17_FLUSH=N: 0 main's loop, 2 unrolled + coarse REDs last (call 1's best), 4 coarse
# REDs first, 5 = 4 + the listing's first scores loaded before the flush, 6 = 5 with the fine REDs
# deferred past the snapshot. Rounds 1-3 top-512 only (DSV4_IDX16_K512), order rotated; rounds 4-5
# with top-1024 too. --indexer-plan-only --indexer-trace. Then parity (list family per variant,
# three family) in parallel. Carried: .wt/idx17 (bins.tar.xz, this script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx17/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
run() {  # name round env...
  local n=$1 r=$2; shift 2
  local bin=$B/bench_attention
  [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 8)) -le 70 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s $*" >>$OUT/bench_$n.txt
  env "$@" timeout 8 $bin --indexer-plan-only --indexer-trace --no-ceilings >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "$n r$r rc$rc $(grep -E "^  fp4 plan" $OUT/cur.txt | awk '{print $(NF-3)}' | tr '\n' ' ')| $(sed '/trace collect launch/,$d' $OUT/cur.txt | grep -E "score (loop end|flushed|snapshot) max|select end max|flushed - waited|snapshot - loop" | awk '{printf "%s ", $(NF>6?NF-4:NF-3)}')"
}
echo "cols: plan rows (us) | loop end max, flushed max, snapshot max, select end max; flushed-waited med, snapshot-loop end t0 med (trace)"
for r in 1 2 3; do
  case $r in 1) o="main 0 2 4 5 6";; 2) o="6 5 4 2 0 main";; 3) o="4 main 6 0 5 2";; esac
  for v in $o; do
    if [ $v = main ]; then run main $r DSV4_IDX16_K512=1; else run v$v $r DSV4_IDX16_K512=1 DSV4_IDX17_FLUSH=$v; fi
  done
done
for r in 4 5; do
  for v in main 0 2 4 5 6; do
    if [ $v = main ]; then run main $r X=0; else run v$v $r DSV4_IDX17_FLUSH=$v; fi
  done
done
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
for v in 2 4 5 6; do
  DSV4_IDX17_FLUSH=$v timeout 60 $B/test_backend_ops --filter indexer_fast_fp4_list >/tmp/pl_$v.txt 2>&1 &
done
timeout 60 $B/test_backend_ops --filter indexer_fast_fp4_three >$OUT/parity_three.txt 2>&1 &
wait
for v in 2 4 5 6; do
  { echo "== DSV4_IDX17_FLUSH=$v"; cat /tmp/pl_$v.txt; } >>$OUT/parity_list.txt
  echo "== list v$v: $(grep -cE " OK" /tmp/pl_$v.txt) OK, $(grep -cE "FAIL" /tmp/pl_$v.txt) FAIL; $(tail -1 /tmp/pl_$v.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/pl_$v.txt | head -3 | cut -c1-300
done
echo "== three: $(grep -cE " OK" $OUT/parity_three.txt) OK, $(grep -cE "FAIL" $OUT/parity_three.txt) FAIL; $(tail -1 $OUT/parity_three.txt | cut -c1-100)"
echo "== total t+$(el)s"
