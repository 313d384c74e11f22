#!/usr/bin/env bash
# IDX18 follow-up (NOT RUN in session 17): where the FP8 score path's +2.1 us go. Binaries
# (bins2.tar.xz, wip/idx18 fde060f): main = bc64ad5's bench_attention; d0 = the FP8 path with the
# head weights from w_pairs; d1 = DSV4_IDX18_DIAG 1 (the fp8 kernel, every pass on the bf16 path:
# the q conversion's cost); d2 = DSV4_IDX18_DIAG 2 (no q conversion, q8 = 1.0: the FP8 loop alone,
# WRONG scores, compare the "scores" rows only). Each run: --indexer-plan-only --q-fp4
# --indexer-trace (top-512; the trace of the plan and of the fp8 plan). Then the fp8 parity of d0.
# Carried: .wt/idx18 (bins2.tar.xz, this script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx18/bins2.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
run() {  # variant round
  local v=$1 r=$2 extra="--q-fp4"
  [ "$v" = main ] && extra=""
  [ $(($(el) + 12)) -le 70 ] || { echo "== skip $v r$r"; return; }
  echo "== $v round $r t+$(el)s" >>$OUT/bench_$v.txt
  DSV4_IDX16_K512=1 timeout 12 $B/bench_attention_$v --indexer-plan-only --indexer-trace $extra \
    --no-ceilings >$OUT/cur.txt 2>&1
  echo "== $v r$r rc $? t+$(el)s"
  cat $OUT/cur.txt >>$OUT/bench_$v.txt
  grep -E "^  fp4 plan|^    scores|indexer phase trace|^  trace|score (loop end|end) max|select end max|loop end|listed" $OUT/cur.txt | sed 's/  */ /g' | cut -c1-110 | head -40
}
for v in main d0 d1 d2; do run $v 1; done
for v in d2 d1 d0 main; do run $v 2; done
rm -f $OUT/cur.txt
timeout 60 $B/test_backend_ops --filter indexer_fast_fp4_fp8 >$OUT/parity_fp8.txt 2>&1
echo "== fp8: $(grep -cE " OK" $OUT/parity_fp8.txt) OK, $(grep -cE "FAIL" $OUT/parity_fp8.txt) FAIL; $(tail -n 1 $OUT/parity_fp8.txt | cut -c1-80)"
grep -E "FAIL" $OUT/parity_fp8.txt | cut -c1-300 | head -4
echo "== done t+$(el)s"
