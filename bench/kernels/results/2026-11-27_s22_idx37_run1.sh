#!/usr/bin/env bash
# IDX37 (session 22) device call 1: the indexer select's plan.list_rank ranking, one key per lane
# (F read by broadcast LDS.128 in per-warp slices, warps' counts summed by shared atomics) vs main.
# Binaries: base = main f8025cb's bench_attention (/work/main/build-v22); new = wip/idx37 a9ec7e7
# (bench_attention, test_backend_ops, test_gpu_model); b = wip/idx37-variants b704f24's bench_attention
# (the same ranking with the row computed after the count instead of before it).
# 1. --indexer-plan-only --indexer-trace, 4 rounds (order reversed every other round);
# 2. --indexer-chain, 4 processes per config, rotated; 3. parity of new: families,
#    indexer_fast_fp4 in the background (150 s), test_gpu_model (one process).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx37/idx37_r1.tar.xz
G=build-gpu-idx37; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx37_logs; rm -rf $L; mkdir -p $L/parity
bin_of() { case $1 in base) echo $G/bench_attention_base;; b) echo $G/bench_attention_b;; new) echo $G/bench_attention;; esac; }
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base new b"; else order="b new base"; fi
  for n in $order; do
    echo "== $n r$r t+$(el)" >> $L/idx_$n.txt
    timeout 25 $(bin_of $n) --indexer-plan-only --indexer-trace > $L/cur.txt 2>&1; rc=$?
    cat $L/cur.txt >> $L/idx_$n.txt
    echo "idx $n r$r rc$rc t=$(el): $(grep -E '^  fp4 plan ' $L/cur.txt | awk '{printf "%s ", $(NF-3)}') | F/end med 512: $(awk '/indexer phase trace, T=1 entries=262144 top_k=512:/{p=1} /trace collect launch/{p=0} p' $L/cur.txt | grep -E '^      select (F|end) \(' | awk '{printf "%s ", $(NF-1)}')"
  done
  [ $(el) -lt 45 ] || break
done
for n in base new b b new base base new b new b base; do
  echo "== chain $n t+$(el)" >> $L/chain_$n.txt
  timeout 25 $(bin_of $n) --indexer-chain > $L/cur.txt 2>&1; rc=$?
  cat $L/cur.txt >> $L/chain_$n.txt
  echo "chain $n rc$rc t=$(el): $(grep -E 'graph: .*per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
  [ $(el) -lt 110 ] || break
done
med() { grep -E "^  fp4 plan .*top_k=$2 " $L/idx_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, %s-%s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'; }
for n in base new b; do echo "median plan $n: top-512 $(med $n 512); top-1024 $(med $n 1024)"; done
for n in base new b; do
  echo "== trace $n (first process, top-512 / top-1024: select F, end per CTA min/med/max)"
  awk '/indexer phase trace, T=1 entries=262144 top_k=(512|1024):/{p=1; print} /trace collect launch/{p=0} p' $L/idx_$n.txt | grep -E "^      select (F|end) \(|listed" | head -12
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
tar czf $OUT/idx37_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
