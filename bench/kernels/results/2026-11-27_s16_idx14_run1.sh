#!/usr/bin/env bash
# IDX14 (session 16) device call 1: main's bench_attention (base, 8e0ec0e) vs wip/idx14's (new,
# plan.score_fair: the plan's default 2, rows off / 1 / 3), alternating, --indexer-plan-only; the
# new binary's trace (plan vs score_fair off, same process); then parity (list family; three + fp4
# families) and test_gpu_model at once. Carried: .wt/idx14 (bins.tar.xz, this script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx14/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
# test_gpu_model reads its fixtures through the source root it was compiled in.
[ -e /work/wt/idx14 ] || { mkdir -p /work/wt && ln -sfn "$PWD" /work/wt/idx14; }
nvidia-smi -L
start=$(date +%s)
bench() {  # binary log args...
  local bin=$1 log=$2
  shift 2
  timeout 25 $B/bench_attention_$bin --indexer-plan-only "$@" >$OUT/$log.txt 2>&1
  echo "== $log rc $? t+$(($(date +%s) - start))s"
  grep -E "ceiling|floor|^  fp4 |^    scores" $OUT/$log.txt | sed 's/  */ /g'
}
bench base bench_1_base
bench new bench_1_new
bench base bench_2_base --no-ceilings
bench new trace_new --no-ceilings --indexer-trace
sed -n '/indexer phase trace/,$p' $OUT/trace_new.txt | grep -vE "^      [12] CTAs|collect|^  fp4|^    (scores|to collect|stages)" | sed 's/  */ /g'
timeout 90 $B/test_backend_ops --filter indexer_fast_fp4_list >$OUT/parity_list.txt 2>&1 &
timeout 90 $B/test_backend_ops --filter indexer_fast_fp4_three,indexer_fast_fp4 \
  >$OUT/parity_fp4.txt 2>&1 &
(timeout 90 $B/test_gpu_model >$OUT/gpu_model.txt 2>&1; echo "exit $?" >>$OUT/gpu_model.txt) &
wait
for f in parity_list parity_fp4; do
  echo "== $f: $(grep -cE " OK" $OUT/$f.txt) OK, $(grep -cE "FAIL" $OUT/$f.txt) FAIL; $(tail -1 $OUT/$f.txt)"
  grep -E "FAIL" $OUT/$f.txt | head -4 | cut -c1-300
done
grep -E "fair" $OUT/parity_list.txt | cut -c1-200
echo "== gpu_model: $(grep -E "passed, [0-9]+ failed" $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt); $(grep -c " OK" $OUT/gpu_model.txt) OK lines, $(grep -ci "fail" $OUT/gpu_model.txt) fail lines"
echo "== total $(($(date +%s) - start))s"
