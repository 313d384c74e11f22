#!/usr/bin/env bash
# IDX15 (session 16) device call: wip/idx15's bench_attention --indexer-plan-only --indexer-trace
# (main's path + the per-warpgroup loop-end and barrier stamps), then indexer_fast_fp4_list parity
# (sequential: the parity must not overlap the trace). Carried: .wt/idx15 (bins.tar.xz, this
# script), .deps.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b
mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx15/bins.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
timeout 28 $B/bench_kernels/bench_attention --indexer-plan-only --no-ceilings --indexer-trace >$OUT/trace.txt 2>&1
echo "== trace rc $? t+$(($(date +%s) - start))s"
sed -n '/indexer phase trace/,$p' $OUT/trace.txt | grep -vE "collect|^  fp4|^    (scores|to collect|stages)|select (entry|wait|threshold)" | sed 's/  */ /g'
grep -E "^  fp4 " $OUT/trace.txt | sed 's/  */ /g'
timeout 27 $B/test_backend_ops --filter indexer_fast_fp4_list >$OUT/parity_list.txt 2>&1
echo "== parity_list rc $?: $(grep -cE " OK" $OUT/parity_list.txt) OK, $(grep -cE "FAIL" $OUT/parity_list.txt) FAIL; $(tail -1 $OUT/parity_list.txt | cut -c1-200)"
grep -E "FAIL" $OUT/parity_list.txt | head -4 | cut -c1-300
echo "== total $(($(date +%s) - start))s"
