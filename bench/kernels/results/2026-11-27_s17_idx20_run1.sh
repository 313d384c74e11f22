#!/usr/bin/env bash
# IDX20 (session 17) device call: main = main bab918b's bench_attention (/work/main/build-cuda, same
# indexer code as 59c1e6e; select_ctas 32 at T=1); ours = wip/idx20 cee8492's with DSV4_IDX20_SEL
# = 32 / 64 / 96 / 132 select CTAs (ours at 32: only the second list row prefetched with the state;
# at 64+: also warps sharing a key when a CTA ranks <= 16 keys). Rounds 1-5, order rotated,
# --indexer-plan-only --indexer-trace (top-512 and top-1024). Parity: list (default 132 and SEL 64),
# three, fp4, indexer_fast, indexer_fast_fp8, in the background after the bench.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx20/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
venv() { case $1 in main) echo "X=0";; s32) echo "DSV4_IDX20_SEL=32";; s64) echo "DSV4_IDX20_SEL=64";;
  s96) echo "DSV4_IDX20_SEL=96";; s132) echo "DSV4_IDX20_SEL=132";; esac; }
run() {  # name round
  local n=$1 r=$2
  local bin=$B/bench_attention; [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 6)) -le 50 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s $(venv $n)" >>$OUT/bench_$n.txt
  env $(venv $n) timeout 10 $bin --indexer-plan-only --indexer-trace $A >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "$n r$r rc$rc t+$(el) $(grep -E "ceiling|floor" $OUT/cur.txt | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan" $OUT/cur.txt | awk '{print $(NF-3)}' | tr '\n' ' ')| $(awk '/trace collect launch/{skip=1} /indexer phase trace/{skip=0} !skip' $OUT/cur.txt | grep -E "select entry max|select wait max|select F max|select end max|listed candidates" | awk '/listed candidates/{printf "L%s ", $3; next} {printf "%s ", $(NF-4)}')"
}
echo "cols: ceilings | plan rows 512 512again 1024 1024again | per trace (score_list): select entry max, wait max, F max, end max, listed"
A=""; run main 1; A="--no-ceilings"
for v in s32 s64 s96 s132; do run $v 1; done
for v in s132 s96 s64 s32 main; do run $v 2; done
for v in s64 main s132 s32 s96; do run $v 3; done
for v in s96 s32 main s132 s64; do run $v 4; done
for v in main s132 s64 s96 s32; do run $v 5; done
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
p() { local tag=$1 fam=$2; shift 2; env "$@" timeout 50 $B/test_backend_ops --filter $fam >/tmp/p_$tag.txt 2>&1; }
p list indexer_fast_fp4_list X=0 &
p list64 indexer_fast_fp4_list DSV4_IDX20_SEL=64 &
p three indexer_fast_fp4_three X=0 &
p fp4 indexer_fast_fp4 X=0 &
p bf16 indexer_fast,indexer_fast_fp8 X=0 &
wait
for t in list list64 three fp4 bf16; do
  { echo "== $t"; cat /tmp/p_$t.txt; } >>$OUT/parity.txt
  echo "== parity $t: $(grep -cE " OK" /tmp/p_$t.txt) OK, $(grep -cE "FAIL" /tmp/p_$t.txt) FAIL; $(tail -1 /tmp/p_$t.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/p_$t.txt | head -3 | cut -c1-300
done
echo "== total t+$(el)s"
