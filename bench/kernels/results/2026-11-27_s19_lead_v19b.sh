#!/usr/bin/env bash
# Session 19 lead, final tree on the H100 (call v19b): parity of the changed families (attention TMA tiles, indexer fast list
# kernel, W4A16 ws/q4 if changed), test_gpu_model, and figures: indexer plan main vs final, attention
# --focus main vs final, W4A16 against cuBLAS dense and grouped on the same routing (--prefill-t 4096),
# ws bench (if the prefill kernels changed).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v19b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 120 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_attn --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention &
run b_idx --filter indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three &
run c_idx4 --filter indexer_fast_fp4 &
[ -f $G/prefill_families.txt ] && run d_pf --filter "$(cat $G/prefill_families.txt)" --per-op 16 &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3 | cut -c1-200; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
echo "t=$(el)"
for r in 1 2; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 30 $bin --indexer-plan-only > $OUT/cur.txt 2>&1; cat $OUT/cur.txt >> $OUT/idx_$n.txt
  echo "idx $n r$r t=$(el): $(grep -E '^  fp4 plan ' $OUT/cur.txt | awk '{print $(NF-4), $(NF-3)}' | tr '\n' ' ')"
done; done
for r in 1; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 40 $bin --focus > $OUT/cur.txt 2>&1; cat $OUT/cur.txt >> $OUT/focus_$n.txt
  echo "focus $n r$r t=$(el): $(grep -E '^  plan' $OUT/cur.txt | awk '{printf "%s ", $(NF-3)}')"
done; done; rm -f $OUT/cur.txt
timeout 100 $G/bench_moe_linear --prefill-t 4096 --prefill-flash > $OUT/prefill_group.txt 2>&1; echo "prefill_group rc=$? t=$(el)"
grep -E "dense \(ceil\)|grouped \(ceil\)|repack|rp " $OUT/prefill_group.txt | sed -E 's/ +/ /g' | cut -c1-130
if [ -f $G/prefill_families.txt ]; then
  timeout 90 $G/bench_moe_linear --prefill-ws --ws-t 4096 --formats mxfp4,nvfp4 --ws-epis 4,16 > $OUT/ws_new.txt 2>&1; echo "ws new rc=$? t=$(el)"
  timeout 90 $G/bench_moe_linear_base --prefill-ws --ws-t 4096 --formats mxfp4,nvfp4 --ws-epis 4,16 > $OUT/ws_base.txt 2>&1; echo "ws base rc=$? t=$(el)"
  grep -hE "epi(4|16) rp p1|dense" $OUT/ws_new.txt $OUT/ws_base.txt | sed -E 's/ +/ /g' | cut -c1-110
fi
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
cd $OUT && tar czf bench_logs.tgz idx_*.txt focus_*.txt && rm -f idx_*.txt focus_*.txt; cd - >/dev/null
echo "done t=$(el)"; ls $OUT
