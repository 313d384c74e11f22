#!/usr/bin/env bash
# IDX18 (session 17) device call: exact FP8 indexer scores (plan.q_fp4). main = bc64ad5's
# bench_attention (random bf16 q, the plan); ours = wip/idx18's bench_attention --q-fp4 (q E2M1 x
# 2^e per (head, 32-dim block)): rows "fp4 plan" (q_fp4 off: the bf16 score path) and
# "fp4 plan fp8" (q_fp4 on), interleaved in one process. Then parity (fp8 / list / three families)
# and test_gpu_model in parallel. Carried: .wt/idx18 (bins.tar.xz, this script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx18/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
root="$(cat $B/source_root.txt)"
if [ "$root" != "$PWD" ] && [ ! -e "$root" ]; then mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"; fi
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
run() {  # name round limit args...
  local n=$1 r=$2 lim=$3; shift 3
  local bin=$B/bench_attention
  [ "$n" = main ] && bin=$B/bench_attention_main
  [ $(($(el) + lim)) -le 75 ] || { echo "== skip $n r$r (t+$(el)s)"; return; }
  echo "== $n round $r t+$(el)s $*" >>$OUT/bench_$n.txt
  timeout $lim env "$@" >$OUT/cur.txt 2>&1
  local rc=$?
  cat $OUT/cur.txt >>$OUT/bench_$n.txt
  echo "== $n r$r rc $rc t+$(el)s"
  grep -E "ceiling|floor|^  fp4 plan|^    scores" $OUT/cur.txt | sed 's/  */ /g' | cut -c1-120
}
run main 1 20 $B/bench_attention_main --indexer-plan-only
run ours 1 25 $B/bench_attention --indexer-plan-only --q-fp4 --no-ceilings
run ours 2 18 DSV4_IDX16_K512=1 $B/bench_attention --indexer-plan-only --q-fp4 --no-ceilings
run main 2 10 DSV4_IDX16_K512=1 $B/bench_attention_main --indexer-plan-only --no-ceilings
rm -f $OUT/cur.txt
echo "== parity + gpu_model t+$(el)s"
lim=$((140 - $(el)))
[ $lim -gt 75 ] && lim=75
(timeout $lim $B/test_gpu_model >$OUT/gpu_model.txt 2>&1; echo "exit $?" >>$OUT/gpu_model.txt) &
for f in indexer_fast_fp4_fp8 indexer_fast_fp4_list indexer_fast_fp4_three; do
  timeout $lim $B/test_backend_ops --filter $f >$OUT/parity_$f.txt 2>&1 &
done
wait
for f in indexer_fast_fp4_fp8 indexer_fast_fp4_list indexer_fast_fp4_three; do
  echo "== $f: $(grep -cE " OK" $OUT/parity_$f.txt) OK, $(grep -cE "FAIL" $OUT/parity_$f.txt) FAIL; $(tail -n 1 $OUT/parity_$f.txt | cut -c1-80)"
  grep -E "FAIL" $OUT/parity_$f.txt | cut -c1-400 | head -4
done
grep -E " OK|FAIL" $OUT/parity_indexer_fast_fp4_fp8.txt | sed -E 's/ sms=.*collect=0//; s/nmse=[^ ]* *//' | cut -c1-250
echo "== gpu_model: $(tail -n 2 $OUT/gpu_model.txt | tr '\n' ' ')"
grep -E "official|FAIL" $OUT/gpu_model.txt | head -12
echo "== done t+$(el)s"
