#!/usr/bin/env bash
# IDX17 final-tree check (not run by the helper): main 2d9709d's bench_attention vs wip/idx17
# 2d275db's (code 12d688c), alternating 4 rounds, --indexer-plan-only (top-512 and top-1024), then
# parity indexer_fast_fp4_list and indexer_fast_fp4_three of the final tree. ~50-60 s wall.
# Carry [".wt/idx17", ".deps"]; run: bash .wt/idx17/run_final.sh
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B
python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .wt/idx17/bins_final.tar.xz $B || { echo "unpack failed"; exit 1; }
nvidia-smi -L
start=$(date +%s)
for r in 1 2 3 4; do
  for n in main final; do
    bin=$B/bench_attention; [ $n = main ] && bin=$B/bench_attention_main
    a=--no-ceilings; [ $r = 1 ] && [ $n = main ] && a=
    timeout 12 $bin --indexer-plan-only $a >$OUT/cur.txt 2>&1
    cat $OUT/cur.txt >>$OUT/bench_$n.txt
    echo "$n r$r: $(grep -E 'ceiling|floor' $OUT/cur.txt | awk '{printf "%s %s; ", $(NF-1), $NF}')$(grep -E '^  fp4 plan' $OUT/cur.txt | awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^top_k=/) k = substr($i, 7); printf "%s:%s ", k, $(NF-3)}')"
  done
done
rm -f $OUT/cur.txt
timeout 60 $B/test_backend_ops --filter indexer_fast_fp4_list >$OUT/parity_list.txt 2>&1 &
timeout 60 $B/test_backend_ops --filter indexer_fast_fp4_three >$OUT/parity_three.txt 2>&1 &
wait
for f in parity_list parity_three; do echo "$f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(tail -1 $OUT/$f.txt)"; done
echo "total $(($(date +%s) - start))s"
