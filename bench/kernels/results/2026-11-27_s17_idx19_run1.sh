#!/usr/bin/env bash
# IDX19 (session 17) device call: main = main bab918b's bench_attention (/work/main/build-cuda,
# built at 1d5298a, same indexer code); ours = wip/idx19's with DSV4_IDX19_LIST (0 main's coarse add
# in the listing; 2 coarse bins in the flush + fine re-read once; 3 up to 3 re-reads) and
# DSV4_IDX19_WARM (select's dry pass over the list_rank path before its wait). Rounds 1-3, order
# rotated, --indexer-plan-only --indexer-trace (top-512 and top-1024). Then an L2-kept diagnostic
# (DSV4_IDX19_L2KEEP, main and ours), parity (list family under 4 settings, three family).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx19/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
# variant name -> env
venv() { case $1 in main) echo "X=0";; a) echo "DSV4_IDX19_LIST=0 DSV4_IDX19_WARM=0";;
  b) echo "DSV4_IDX19_LIST=2 DSV4_IDX19_WARM=0";; c) echo "DSV4_IDX19_LIST=0 DSV4_IDX19_WARM=1";;
  d) echo "DSV4_IDX19_LIST=2 DSV4_IDX19_WARM=1";; e) echo "DSV4_IDX19_LIST=3 DSV4_IDX19_WARM=1";;
  f) echo "DSV4_IDX19_LIST=1 DSV4_IDX19_WARM=1";; esac; }
run() {  # name round extra-args...
  local n=$1 r=$2; shift 2
  local bin=$B/bench_attention; [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 8)) -le 82 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s $(venv $n) $*" >>$OUT/bench_$n.txt
  env $(venv $n) "$@" timeout 10 $bin --indexer-plan-only --indexer-trace $A >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "$n r$r rc$rc t+$(el) $(grep -E "ceiling|floor" $OUT/cur.txt | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan" $OUT/cur.txt | awk '{print $(NF-3)}' | tr '\n' ' ')| $(awk '/trace collect launch/{skip=1} /indexer phase trace/{skip=0} !skip' $OUT/cur.txt | grep -E "score loop end max|score snapshot max|score listed max|select wait max|select F max|select end max|listed candidates" | awk '/listed candidates/{printf "L%s ", $3; next} {printf "%s ", $(NF-4)}')"
}
echo "cols: ceilings | plan rows 512 512again 1024 1024again | per trace (score_list, collect): loop end max, snapshot max, listed max, select wait max, F max, end max, listed"
A=""; run main 1; A="--no-ceilings"
for v in a b c d e; do run $v 1; done
for v in e d c b a main; do run $v 2; done
for v in c main e a d b; do run $v 3; done
run f 3
echo "== L2 kept (diagnostic) t+$(el)s"
DSV4_IDX19_L2KEEP=1 run main 4; DSV4_IDX19_L2KEEP=1 run c 4
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
p() { local tag=$1 fam=$2; shift 2; env "$@" timeout 60 $B/test_backend_ops --filter $fam >/tmp/p_$tag.txt 2>&1; }
p d indexer_fast_fp4_list DSV4_IDX19_LIST=2 DSV4_IDX19_WARM=1 &
p a indexer_fast_fp4_list DSV4_IDX19_LIST=0 DSV4_IDX19_WARM=0 &
p f indexer_fast_fp4_list DSV4_IDX19_LIST=1 DSV4_IDX19_WARM=1 &
p e indexer_fast_fp4_list DSV4_IDX19_LIST=3 DSV4_IDX19_WARM=0 &
p three indexer_fast_fp4_three X=0 &
wait
for t in d a f e three; do
  { echo "== $t"; cat /tmp/p_$t.txt; } >>$OUT/parity.txt
  echo "== parity $t: $(grep -cE " OK" /tmp/p_$t.txt) OK, $(grep -cE "FAIL" /tmp/p_$t.txt) FAIL; $(tail -1 /tmp/p_$t.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/p_$t.txt | head -3 | cut -c1-300
done
echo "== total t+$(el)s"
