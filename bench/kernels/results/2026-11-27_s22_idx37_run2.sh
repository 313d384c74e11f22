#!/usr/bin/env bash
# IDX37 (session 22) call 2 (prepared for the lead; NOT run by IDX37): call 1's one-key-per-lane
# ranking with the register regression removed. base = main f8025cb's bench_attention (build-v22,
# select kernel 51 registers); c = wip/idx37-variants bb09c03 (a9ec7e7 + __launch_bounds__(1024, 1):
# 47 registers, no stack; a9ec7e7 as measured in call 1 had 32 registers + a 16-byte stack frame);
# d = d13fdd6 (c + per-warp partial counts instead of shared atomics for shares <= 128 keys).
# 1. --indexer-plan-only --indexer-trace, 4 rounds alternating; 2. --indexer-chain, 4 processes each,
#    rotated; 3. parity: d families + indexer_fast_fp4 (background, 150 s) + test_gpu_model, then c families.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx37/idx37_r2.tar.xz
G=build-gpu-idx37; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx37_logs2; rm -rf $L; mkdir -p $L/parity
bin_of() { case $1 in base) echo $G/bench_attention_base;; c) echo $G/bench_attention;; d) echo $G/bench_attention_d;; esac; }
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base c d"; else order="d c base"; fi
  for n in $order; do
    echo "== $n r$r t+$(el)" >> $L/idx_$n.txt
    timeout 25 $(bin_of $n) --indexer-plan-only --indexer-trace > $L/cur.txt 2>&1; rc=$?
    cat $L/cur.txt >> $L/idx_$n.txt
    echo "idx $n r$r rc$rc t=$(el): $(grep -E '^  fp4 plan ' $L/cur.txt | awk '{printf "%s ", $(NF-3)}') | F/end med 512: $(awk '/indexer phase trace, T=1 entries=262144 top_k=512:/{p=1} /trace collect launch/{p=0} p' $L/cur.txt | grep -E '^      select (F|end) \(' | awk '{printf "%s ", $(NF-1)}')"
  done
  [ $(el) -lt 45 ] || break
done
for n in base c d d c base base c d d c base; do
  echo "== chain $n t+$(el)" >> $L/chain_$n.txt
  timeout 25 $(bin_of $n) --indexer-chain > $L/cur.txt 2>&1; rc=$?
  cat $L/cur.txt >> $L/chain_$n.txt
  echo "chain $n rc$rc t=$(el): $(grep -E 'graph: .*per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
  [ $(el) -lt 110 ] || break
done
med() { grep -E "^  fp4 plan .*top_k=$2 " $L/idx_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, %s-%s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'; }
for n in base c d; do echo "median plan $n: top-512 $(med $n 512); top-1024 $(med $n 1024)"; done
for n in base c d; do
  echo "== trace $n (first process, top-512 / top-1024: select F, end per CTA min/med/max)"
  awk '/indexer phase trace, T=1 entries=262144 top_k=(512|1024):/{p=1; print} /trace collect launch/{p=0} p' $L/idx_$n.txt | grep -E "^      select (F|end) \(|listed" | head -12
done
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2 bin=$3; shift 3; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p d_idx4 150 test_backend_ops_d --filter indexer_fast_fp4 &
( p d_idx 100 test_backend_ops_d --filter $F
  timeout 60 $G/test_gpu_model_d > $P/d_gpu_model.txt 2>&1; echo "exit $?" >> $P/d_gpu_model.txt
  p c_idx 60 test_backend_ops --filter $F ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-200; done
rm -f $L/cur.txt
tar czf $OUT/idx37_r2_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
