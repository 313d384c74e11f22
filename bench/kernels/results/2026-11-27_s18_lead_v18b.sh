#!/usr/bin/env bash
# Session 18 lead, H100 figures of the final tree (same binaries as v18a): parity of the merged families,
# test_gpu_model, decode / prefill (q4, wide) / W4A8 / attention / indexer status rows.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v18a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 80 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_attn --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention &
run b_rp --filter moe_prefill_wgmma_ws_repacked --per-op 16 &
run c_orp --filter moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run d_pr --filter moe_prefill_wgmma_ws_pr_repacked,moe_prefill_official_wgmma_ws_pr_repacked --per-op 16 &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3 | cut -c1-200; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
timeout 60 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 > $OUT/decode.txt 2>&1; echo "decode rc=$? t=$(el)"
grep -E "4096 MB|rp official s0" $OUT/decode.txt | sed -E "s/ +/ /g" | cut -c1-120
timeout 20 $G/bench_attention --focus > $OUT/focus.txt 2>&1; echo "focus rc=$? t=$(el)"
grep -E "HBM read|dense BF16|plan: split" $OUT/focus.txt | sed -E "s/ +/ /g" | cut -c1-120
for r in 1 2; do timeout 15 $G/bench_attention --indexer-plan-only $([ $r = 2 ] && echo --no-ceilings) >> $OUT/idx.txt 2>&1; done
echo "idx t=$(el): $(grep -E '^  fp4 plan' $OUT/idx.txt | awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^top_k=/) k = substr($i, 7); printf "%s:%s ", k, $(NF-3)}')"
timeout 60 $G/bench_moe_linear --prefill-ws --ws-t 4096 --formats mxfp4 --ws-epis 4,16 > $OUT/ws.txt 2>&1; echo "ws rc=$? t=$(el)"
grep -hE "speed-up over" $OUT/ws.txt | sed -E 's/ +/ /g' | cut -c1-120
grep -hE "dense|epi(4|16) rp p1|wide" $OUT/ws.txt | sed -E 's/ +/ /g' | cut -c1-100 | head -30
[ $(el) -lt 170 ] && { timeout 35 $G/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t ""  > $OUT/w4a8.txt 2>&1; echo "w4a8 rc=$? t=$(el)"; grep -E "w4a8_ws|fp8 dense" $OUT/w4a8.txt | sed -E 's/ +/ /g' | cut -c1-110; }
echo "done t=$(el)"; ls $OUT
