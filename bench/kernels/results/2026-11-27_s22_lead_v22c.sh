#!/usr/bin/env bash
# Session 22 lead, call v22c (H200): the final tree (cdf92ad: f8025cb + the select's row_of through select_row_of +
# bench --indexer-select-ctas) vs f8025cb (build-v22) in the same call: plan-only + trace 3 rounds alternating;
# chain 3 processes each of base, new, new with 48 and 64 select CTAs; plan-only with 48 / 64 select CTAs; parity of
# the final tree: indexer families (indexer_fast_fp4 alone in the background), test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v22c/v22c.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/v22c; rm -rf $L; mkdir -p $L/parity
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    base) timeout 25 $G/bench_attention_base "$@";;
    new) timeout 25 $G/bench_attention "$@";;
    s48) timeout 25 $G/bench_attention --indexer-select-ctas 48 "$@";;
    s64) timeout 25 $G/bench_attention --indexer-select-ctas 64 "$@";;
  esac
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="base new s48 s64"; else order="s64 s48 new base"; fi
  for n in $order; do
    run_cfg $n --indexer-plan-only --indexer-trace > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/idx_$n.txt
    echo "idx $n r$r t=$(el): $(grep -E '^  fp4 plan ' $L/cur.txt | awk '{printf "%s %s ", $(NF-4), $(NF-3)}')"
  done
done
for n in base new s48 s64 s64 s48 new base base new s48 s64; do
  run_cfg $n --indexer-chain > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/chain_$n.txt
  echo "chain $n t=$(el): $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
done
med() { grep -E "^  fp4 plan .*top_k=$2 " $L/idx_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, %s-%s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'; }
for n in base new s48 s64; do echo "median plan $n: top-512 $(med $n 512); top-1024 $(med $n 1024)"; done
for n in new s64; do
  echo "== trace $n (first process, top-512)"
  awk '/indexer phase trace, T=1 entries=262144 top_k=512/{p=1} /trace collect launch/{p=0} p' $L/idx_$n.txt | grep -E "^      (score|select) .*\([0-9]\)|listed candidates" | head -12
done
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p idx4 150 --filter indexer_fast_fp4 &
( p idx 100 --filter indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
  timeout 60 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-200; done
rm -f $L/cur.txt
tar czf $OUT/v22c_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
