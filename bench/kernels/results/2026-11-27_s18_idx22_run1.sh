#!/usr/bin/env bash
# IDX22 (session 18) device call: main = /work/main/build-cuda's bench_attention (main bae20d9);
# idx22 = wip/idx22's bench_attention, test_backend_ops, test_gpu_model (select list_rank by
# lanes, plan.rank_lanes default on; rows "fp4 plan warp-rank" = the flag off, "fp4 plan
# rank-probe" = no ranking at all (out not written) in the same process). Rounds alternated,
# --indexer-plan-only --indexer-trace (top-512 and top-1024), then parity and test_gpu_model.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx22/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
# test_gpu_model reads its fixtures through the source root it was compiled in.
mkdir -p /work/wt && [ -e /work/wt/idx22 ] || ln -sfn "$PWD" /work/wt/idx22
summ() {  # one process's log -> one line
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan" $f | awk '{printf "%s ", $(NF-3)}')"
  awk '/^  trace /{name=$2" "$3; sub(/\(median.*/, "", name)}
       /select wait max|select F max|select counted max|select end max/{v[$2]=$(NF-4)}
       /listed candidates/{printf "    %-22s wait %s F %s counted %s end %s L%s\n", name, v["wait"], v["F"], v["counted"], v["end"], $3; delete v}
       /select F -> end per CTA/{printf "    %-22s F->end %s\n", name, substr($0, index($0, ":") + 2)}
       /select wait -> F per CTA/{printf "    %-22s wait->F %s\n", name, substr($0, index($0, ":") + 2)}' $f
}
run() {  # name round
  local n=$1 r=$2
  local bin=$B/bench_attention; [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + 6)) -le 60 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s" >>$OUT/bench_$n.txt
  timeout 15 $bin --indexer-plan-only --indexer-trace $A >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "$n r$r rc$rc t+$(el) $(summ $OUT/cur.txt)"
}
echo "cols: ceilings | plan rows (main: 512 again 1024 again; idx22: 512 warp-rank rank-probe again, 1024 ...)"
A=""; run main 1; run idx22 1; A="--no-ceilings"
for r in 2 3 4 5 6; do
  if [ $((r % 2)) = 0 ]; then run idx22 $r; run main $r; else run main $r; run idx22 $r; fi
done
rm -f $OUT/cur.txt
echo "== parity t+$(el)s"
p() { local tag=$1 fam=$2; timeout 60 $B/test_backend_ops --filter $fam >/tmp/p_$tag.txt 2>&1; }
p list indexer_fast_fp4_list &
p three indexer_fast_fp4_three &
p bf16 indexer_fast,indexer_fast_fp8 &
(cd /work/wt/idx22 && timeout 60 $B/test_gpu_model >/tmp/p_model.txt 2>&1; echo "exit $?" >>/tmp/p_model.txt) &
wait
for t in list three bf16; do
  { echo "== $t"; cat /tmp/p_$t.txt; } >>$OUT/parity.txt
  echo "== parity $t: $(grep -cE " OK" /tmp/p_$t.txt) OK, $(grep -cE "FAIL" /tmp/p_$t.txt) FAIL; $(tail -1 /tmp/p_$t.txt | cut -c1-100)"
  grep -E "FAIL" /tmp/p_$t.txt | head -3 | cut -c1-300
done
cp /tmp/p_model.txt $OUT/gpu_model.txt
echo "== gpu_model: $(tail -3 /tmp/p_model.txt | tr '\n' ' ' | cut -c1-200)"
echo "== total t+$(el)s"
