#!/usr/bin/env bash
# Session 20 lead, merged tree (IDX26 loop cuts, IDX25 select, MOE24 decode hand-off[, PREFILL20]):
# benches first (alone on the GPU), then parity in parallel.
# Indexer: main b6cea3f kernels (bench_attention_base = a0411a2 build) vs final, --indexer-plan-only
# alternating 2 rounds, --indexer-chain 1 round each. MoE decode: MOE24's single-configuration A/B
# (main b6cea3f's bench_moe_linear_base vs final), 2 rounds alternating.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v20a/v20a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/v20a; rm -rf $L; mkdir -p $L/parity
for r in 1 2; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 25 $bin --indexer-plan-only > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/idx_$n.txt
  echo "idx $n r$r t=$(el): $(grep -E '^  fp4 plan |^    stages' $L/cur.txt | awk '/fp4 plan/{printf "%s %s ", $(NF-4), $(NF-3)} /stages/{printf "[sel %s] ", $8}')"
done; done
for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 25 $bin --indexer-chain > $L/chain_$n.txt 2>&1
  echo "chain $n t=$(el): $(grep -E 'chained|1 call' $L/chain_$n.txt | awk '{printf "%s %s ", $(NF-4), $(NF-3)}')"
done
C=s0x4.2.4hwlpfgmc
AB="--decode-ab --ab-official --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 15 --ab $C"
for r in 1 2; do
  if [ $r = 1 ]; then order="base new"; else order="new base"; fi
  for x in $order; do
    bin=$G/bench_moe_linear; [ $x = base ] && bin=$G/bench_moe_linear_base
    echo "== $x r$r t+$(el)" >> $L/moe_$x.txt
    timeout 30 $bin $AB > $L/cur.txt 2>&1; echo "moe $x r$r rc=$? t=$(el)"; cat $L/cur.txt >> $L/moe_$x.txt
  done
done
python3 - $L <<'PY'
import sys, collections, statistics
L = sys.argv[1]; rows = collections.defaultdict(lambda: collections.defaultdict(list))
for tag in ("base", "new"):
    for l in open(f"{L}/moe_{tag}.txt"):
        if "rp official" in l:
            f = l.split(); rows[(f[0], f[1], int(f[6]))][tag].append((float(f[8]), f[10]))
for k in sorted(rows):
    b = [v for v, _ in rows[k]["base"]]; n = [v for v, _ in rows[k]["new"]]
    if b and n:
        print(f"{k[0]} {k[1]} T={k[2]}: base {'/'.join('%.2f' % v for v in b)} us, new {'/'.join('%.2f' % v for v in n)} us, "
              f"speed {statistics.median(b) / statistics.median(n):.3f}x; %read base {'/'.join(p for _, p in rows[k]['base'])} new {'/'.join(p for _, p in rows[k]['new'])}")
PY
[ -x $G/extra_bench.sh ] && bash $G/extra_bench.sh $G $L
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p idx 60 --filter indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack &
p idx4 75 --filter indexer_fast_fp4 &
p moe_orp 60 --filter moe_decode_official_repacked &
p moe_chains 60 --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_chain127,moe_decode_official_repacked_chain31,moe_decode_official_repacked_chain255 &
p moe_xs 60 --filter moe_decode_official_repacked_xs,moe_decode_repacked,moe_decode_official_repacked_rt2 --per-op 8 &
[ -f $G/prefill_families.txt ] && p pf 70 --filter "$(cat $G/prefill_families.txt)" --per-op 12 &
(timeout 75 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-200; done
rm -f $L/cur.txt
tar czf $OUT/v20a_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
