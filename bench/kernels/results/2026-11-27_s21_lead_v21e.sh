#!/usr/bin/env bash
# Session 21 lead, call v21e (H200): the final tree (main 8fb9c6f: IDX29 + IDX32 + IDX33) vs main
# 462a085 (build-final) in the same call: indexer plan-only 3 rounds alternating, chain 2 each; parity:
# indexer families (indexer_fast_fp4 alone in the background), test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v21e/v21e.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/v21e; rm -rf $L; mkdir -p $L/parity
for r in 1 2 3; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 25 $bin --indexer-plan-only > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/idx_$n.txt
  echo "idx $n r$r t=$(el): $(grep -E '^  fp4 plan ' $L/cur.txt | awk '{printf "%s %s ", $(NF-4), $(NF-3)}')"
done; done
for r in 1 2; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 25 $bin --indexer-chain > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/chain_$n.txt
  echo "chain $n r$r t=$(el): $(grep -E 'chained|1 call' $L/cur.txt | awk '{printf "%s %s ", $(NF-4), $(NF-3)}')"
done; done
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p idx4 150 --filter indexer_fast_fp4 &
( p idx 100 --filter indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
  timeout 50 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-200; done
rm -f $L/cur.txt
tar czf $OUT/v21e_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
