#!/usr/bin/env bash
# Session 17 lead, final tree: PREFILL16's wide kernel (parity + --ws-wides 0,1), IDX20 if merged
# (indexer parity + A/B vs bab918b's bench_attention), test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v17b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 100 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_wide --filter moe_prefill_wgmma_ws_wide_repacked --per-op 16 &
run b_wide_off --filter moe_prefill_official_wgmma_ws_wide_repacked --per-op 16 &
run c_wsrp --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 8 &
run d_idx --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
timeout 80 $G/bench_moe_linear --prefill-ws --ws-wides 0,1 --ws-t 4096,8192 --formats mxfp4,nvfp4 > $OUT/ws_wides.txt 2>&1; echo "ws_wides rc=$? t=$(el)"
grep -hE "speed-up over|differ" $OUT/ws_wides.txt | grep -vE " 0 of [0-9]+ differ, 0 unwritten" | sed -E 's/ +/ /g' | cut -c1-150 | head -30
if [ -x $G/bench_attention_base ]; then
  for r in 1 2 3; do for n in base new; do
    bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
    a=--no-ceilings; [ $r = 1 ] && a=
    timeout 15 $bin --indexer-plan-only $a > $OUT/cur.txt 2>&1
    cat $OUT/cur.txt >> $OUT/idx_$n.txt
    echo "idx $n r$r: $(grep -E '^  fp4 plan' $OUT/cur.txt | awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^top_k=/) k = substr($i, 7); printf "%s:%s ", k, $(NF-3)}')"
  done; done; rm -f $OUT/cur.txt
fi
echo "done t=$(el)"; ls $OUT
