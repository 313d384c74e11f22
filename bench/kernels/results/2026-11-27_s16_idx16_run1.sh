#!/usr/bin/env bash
# IDX16 (session 16) device call: split of the score_three CTA's barrier -> flushed into
# pdl_wait and the flush issue (stamp after pdl_wait), and the A/B of pdl_wait's position:
# B = wip/idx15's bench_attention (b001535 code), S = wip/idx16 default (wait after the barrier,
# + the stamp), V1 = DSV4_IDX16_WAIT=1 (wait in the prologue), V2 = DSV4_IDX16_WAIT=2 (before the
# last pass). Rounds alternate B S V1 V2; then parity (default, then the faster variant of round 1),
# then a second round B S V1 V2 while time is left.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx16/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
el() { echo $(($(date +%s) - start)); }
summ() {  # plan rows and the split lines of one log
  grep -E "^  fp4 plan|score (loop end|flushed) max|select end max|flushed - barrier|waited - barrier|flushed - waited|max over CTAs" "$1" | sed 's/  */ /g'
}
tr() {  # name binary env...
  local n=$1 bin=$2; shift 2
  [ $(( $(el) + 13 )) -le 58 ] || { echo "== skip $n (t+$(el)s)"; return; }
  echo "== $n round $R t+$(el)s" >>$OUT/$n.txt
  env "$@" timeout 13 $bin --indexer-plan-only --no-ceilings --indexer-trace >>$OUT/$n.txt 2>&1
  echo "== $n r$R rc $? t+$(el)s"
}
round() {
  tr b $B/idx15/bench_attention DSV4_IDX16_K512=1
  tr s $B/bench_attention DSV4_IDX16_K512=1
  tr v1 $B/bench_attention DSV4_IDX16_K512=1 DSV4_IDX16_WAIT=1
  tr v2 $B/bench_attention DSV4_IDX16_K512=1 DSV4_IDX16_WAIT=2
}
R=1 round
par() {  # name filter env...
  local n=$1 f=$2; shift 2
  [ $(( $(el) + 12 )) -le 58 ] || { echo "== skip $n (t+$(el)s)"; return; }
  env "$@" timeout 12 $B/test_backend_ops --filter $f >$OUT/$n.txt 2>&1
  echo "== $n rc $?: $(grep -cE " OK" $OUT/$n.txt) OK, $(grep -cE "FAIL" $OUT/$n.txt) FAIL; $(tail -1 $OUT/$n.txt | cut -c1-120) t+$(el)s"
  grep -E "FAIL" $OUT/$n.txt | head -3 | cut -c1-300
}
par parity_list indexer_fast_fp4_list X=0
par parity_three indexer_fast_fp4_three X=0
# the variant with the lower first top-512 plan row (min over rounds) gets its parity
best=$(for n in v1 v2; do grep -E "^  fp4 plan  .*top_k=512" $OUT/$n.txt | awk -v n=$n '{print $(NF-3), n}'; done | sort -n | head -1 | cut -d' ' -f2)
w=${best#v}
echo "== variant parity: $best (DSV4_IDX16_WAIT=$w)"
par parity_${best}_list indexer_fast_fp4_list DSV4_IDX16_WAIT=$w
par parity_${best}_three indexer_fast_fp4_three DSV4_IDX16_WAIT=$w
R=2 round  # (while time is left: the second alternation)
for n in b s v1 v2; do echo "--- $n"; summ $OUT/$n.txt; done
echo "== total t+$(el)s"
