#!/usr/bin/env bash
# Session 18 lead, final tree: parity of the merged families (attention lazy rescale, W4A16 q4, MoE decode if
# MOE23 merged), test_gpu_model, and A/B: q4 (epi16) vs epi4 in one process; attention --focus main vs final.
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
run() { local name=$1; shift; timeout 90 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_attn --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention &
run b_rp --filter moe_prefill_wgmma_ws_repacked --per-op 16 &
run c_orp --filter moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run d_pr --filter moe_prefill_wgmma_ws_pr_repacked,moe_prefill_official_wgmma_ws_pr_repacked --per-op 16 &
[ -f $G/decode_families.txt ] && run e_dec --filter "$(cat $G/decode_families.txt)" --per-op 8 &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3 | cut -c1-200; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
timeout 70 $G/bench_moe_linear --prefill-ws --ws-t 4096 --formats mxfp4,nvfp4 --ws-epis 4,16 > $OUT/ws_epis.txt 2>&1; echo "ws_epis rc=$? t=$(el)"
grep -hE "speed-up over" $OUT/ws_epis.txt | sed -E 's/ +/ /g' | cut -c1-120
grep -hE "differ" $OUT/ws_epis.txt | grep -vcE " 0 of [0-9]+ differ, 0 unwritten" | sed 's/^/bit checks not clean: /'
grep -hE "dense|epi(4|16) rp p1" $OUT/ws_epis.txt | sed -E 's/ +/ /g' | cut -c1-100
for r in 1 2; do for n in base new; do
  bin=$G/bench_attention; [ $n = base ] && bin=$G/bench_attention_base
  timeout 40 $bin --focus > $OUT/cur.txt 2>&1; cat $OUT/cur.txt >> $OUT/focus_$n.txt
  echo "focus $n r$r t=$(el): $(grep -E '^  plan' $OUT/cur.txt | awk '{printf "%s ", $(NF-3)}')"
  echo "   pro T=64: $(grep -E 'plan: split .*H=128' $OUT/cur.txt | awk '{print $(NF-3), $(NF-1), $NF}')"
done; done; rm -f $OUT/cur.txt
if [ -f $G/decode_families.txt ]; then
  for r in 1 2; do for n in base new; do
    bin=$G/bench_moe_linear; [ $n = base ] && bin=$G/bench_moe_linear_base
    [ $(el) -lt 250 ] || break
    timeout 60 $bin --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 > $OUT/cur.txt 2>&1
    cat $OUT/cur.txt >> $OUT/decode_$n.txt; echo "decode $n r$r t=$(el)"; grep -E "4096 MB|rp official s0" $OUT/cur.txt | sed -E "s/ +/ /g" | cut -c1-120
  done; done; rm -f $OUT/cur.txt
fi
echo "done t=$(el)"; ls $OUT
