#!/usr/bin/env bash
# IDX21 (session 17) device call: main = /work/main/build-cuda's bench_attention (main 43de90a,
# indexer code as 12d688c: select_ctas 32 at T=1 for every top_k); idx21 = wip/idx21's (the select
# over plan.select_ctas_wide = 64 CTAs at T=1 where top_k > 512; top-512 unchanged). Rounds 1-6,
# order alternated, --indexer-plan-only --indexer-trace (top-512 and top-1024 rows). Parity of
# idx21's test_backend_ops after the bench: list, three, indexer_fast + indexer_fast_fp8.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx21/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
run() {  # name round
  local n=$1 r=$2
  local bin=$B/bench_attention; [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 4)) -le 35 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s" >>$OUT/bench_$n.txt
  timeout 10 $bin --indexer-plan-only --indexer-trace $A >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "$n r$r rc$rc t+$(el) $(grep -E "ceiling|floor" $OUT/cur.txt | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan" $OUT/cur.txt | awk '{print $(NF-3)}' | tr '\n' ' ')| $(grep -oE "plan select_ctas [0-9]+" $OUT/cur.txt | awk '{printf "%s ", $3}')| $(awk '/trace collect launch/{skip=1} /indexer phase trace/{skip=0} !skip' $OUT/cur.txt | grep -E "select entry max|select wait max|select F max|select end max|listed candidates" | awk '/listed candidates/{printf "L%s ", $3; next} {printf "%s ", $(NF-4)}')"
}
echo "cols: ceilings | plan rows 512 512again 1024 1024again | select CTAs per row | per trace (score_list): select entry max, wait max, F max, end max, listed"
A=""; run main 1; A="--no-ceilings"; run idx21 1
for r in 2 3 4 5 6; do
  if [ $((r % 2)) = 0 ]; then run idx21 $r; run main $r; else run main $r; run idx21 $r; fi
done
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
p() { local tag=$1 fam=$2; timeout 55 $B/test_backend_ops --filter $fam >/tmp/p_$tag.txt 2>&1; }
p list indexer_fast_fp4_list &
p three indexer_fast_fp4_three &
p bf16 indexer_fast,indexer_fast_fp8 &
wait
for t in list three bf16; do
  { echo "== $t"; cat /tmp/p_$t.txt; } >>$OUT/parity.txt
  echo "== parity $t: $(grep -cE " OK" /tmp/p_$t.txt) OK, $(grep -cE "FAIL" /tmp/p_$t.txt) FAIL; $(tail -1 /tmp/p_$t.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/p_$t.txt | head -3 | cut -c1-300
done
echo "== total t+$(el)s"
