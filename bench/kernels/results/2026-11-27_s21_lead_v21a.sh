#!/usr/bin/env bash
# Session 21 lead, call v21a (H100): session 20's final tree (main 462a085) on the H100, base = main
# b6cea3f's kernels (session 19's final tree) in the same call. Benches first (alone on the GPU):
# indexer plan-only 2 rounds alternating + chain, MoE decode A/B (rp official) 2 rounds alternating,
# W4A8 ws Flash T=4096 base vs new, --w4a8-ab (W4A8 ws and the engine's W4A16 path, old vs new
# non-GEMM kernels in one process). Then parity of the new tree: the generic moe.cu path now on the
# shared 4-wide combine (moe_experts, moe_official), indexer, MoE decode, prefill subsets, test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v21a/v21a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/v21a; rm -rf $L; mkdir -p $L/parity
for r in 1 2; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 25 $bin --indexer-plan-only > $L/cur.txt 2>&1; cat $L/cur.txt >> $L/idx_$n.txt
  echo "idx $n r$r t=$(el): $(grep -E '^  fp4 plan ' $L/cur.txt | awk '{printf "%s %s ", $(NF-4), $(NF-3)}')"
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
for x in base new; do
  bin=$G/bench_moe_linear; [ $x = base ] && bin=$G/bench_moe_linear_base
  timeout 30 $bin --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $L/w4a8_$x.txt 2>&1; echo "w4a8 $x rc=$? t=$(el)"
  grep -E "ws|cuBLASLt|FP8" $L/w4a8_$x.txt | sed -E 's/ +/ /g' | cut -c1-140 | head -8
done
timeout 45 $G/bench_moe_linear --w4a8-ab --w4a8-flash-t 4096 --w4a8-pro-t "" --replays 10 > $L/w4a8_ab.txt 2>&1; echo "w4a8-ab rc=$? t=$(el)"
tail -15 $L/w4a8_ab.txt | cut -c1-160
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p generic 80 --filter moe_experts,moe_official,moe_prefill,moe_prefill_official --per-op 12 &
p idx 80 --filter indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack &
p moe_chains 80 --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_chain127,moe_decode_official_repacked_chain31,moe_decode_official_repacked_chain255 &
wait
p moe_xs 60 --filter moe_decode_official_repacked_xs,moe_decode_repacked,moe_decode_official_repacked_rt2 --per-op 8 &
p pf 60 --filter moe_prefill_official_w4a8_ws,moe_prefill_official_wgmma_ws_repacked,moe_prefill_wgmma_ws_repacked,moe_prefill_official_w4a8_serial --per-op 12 &
(timeout 75 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-200; done
rm -f $L/cur.txt
tar czf $OUT/v21a_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
