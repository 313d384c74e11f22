#!/usr/bin/env bash
# Session 17 lead: verification of the merged main (IDX17 flush, REVIEW17 factoring, PREFILL15 wide
# W4A16 ws tiles): parity of the touched families + test_gpu_model; indexer A/B vs main 2d9709d's
# bench_attention; --ws-wides 0,1; W4A8; H200 status rows (--focus, decode-ab); IDX18's diagnostic.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v17a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 70 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_idx --filter indexer_fast_fp4_list,indexer_fast_fp4_three &
run b_wide --filter moe_prefill_wgmma_ws_wide_repacked,moe_prefill_official_wgmma_ws_wide_repacked --per-op 16 &
run c_wsrp --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 14 &
run d_w4a8 --filter moe_prefill_official_w4a8,moe_prefill_official_w4a8_serial,moe_prefill_official_w4a8_ws --per-op 14 &
run e_attn --filter attention_decode,attention_decode_fold,attention_decode_fp8 --per-op 12 &
run f_dec --filter moe_decode_official_repacked,moe_decode_repacked --per-op 10 &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
B=$G/bench_kernels; [ -x $B/bench_attention ] || B=$G
# Indexer: main 2d9709d (before IDX17) vs merged, alternating.
for r in 1 2 3; do for n in main new; do
  bin=$B/bench_attention; [ $n = main ] && bin=$B/bench_attention_main
  a=--no-ceilings; [ $r = 1 ] && a=
  timeout 15 $bin --indexer-plan-only $a > $OUT/cur.txt 2>&1
  cat $OUT/cur.txt >> $OUT/idx_$n.txt
  echo "idx $n r$r: $(grep -E '^  fp4 plan' $OUT/cur.txt | awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^top_k=/) k = substr($i, 7); printf "%s:%s ", k, $(NF-3)}')"
done; done; rm -f $OUT/cur.txt; echo "t=$(el)"
timeout 90 $B/bench_moe_linear --prefill-ws --ws-wides 0,1 --ws-t 4096,8192 --formats mxfp4,nvfp4 > $OUT/ws_wides.txt 2>&1; echo "ws_wides rc=$? t=$(el)"
grep -hE "speed|geomean|differ|%dense|wide" $OUT/ws_wides.txt | sed -E 's/ +/ /g' | cut -c1-160 | head -30
timeout 40 $B/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096 > $OUT/w4a8.txt 2>&1; echo "w4a8 rc=$? t=$(el)"
grep -E "w4a8_ws|dense|differ" $OUT/w4a8.txt | sed -E 's/ +/ /g' | cut -c1-150 | head -12
[ $(el) -lt 330 ] && { timeout 70 $B/bench_attention --focus > $OUT/focus.txt 2>&1; echo "focus rc=$? t=$(el)"; grep -vE "^\s*$" $OUT/focus.txt | cut -c1-150 | head -40; }
[ $(el) -lt 390 ] && { timeout 60 $B/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 > $OUT/decode.txt 2>&1; echo "decode rc=$? t=$(el)"; grep -E "% of read|read|T=" $OUT/decode.txt | cut -c1-150 | head -30; }
# IDX18's packed diagnostic (bins of wip/idx18 fde060f): m18 = this tree's bench_attention / d0 FP8 / d1 conversion only / d2 loop only.
if [ $(el) -lt 440 ]; then
  D=$B; cp $B/bench_attention $D/bench_attention_m18  # bc64ad5's bench_attention = this tree's (no indexer change since)
  for r in 1 2; do for v in m18 d0 d1 d2; do
    [ $(el) -lt 520 ] || break
    x="--q-fp4"; [ $v = m18 ] && x=""
    DSV4_IDX16_K512=1 timeout 12 $D/bench_attention_$v --indexer-plan-only --indexer-trace $x --no-ceilings > $OUT/cur.txt 2>&1
    cat $OUT/cur.txt >> $OUT/idx18_diag_$v.txt
    echo "d18 $v r$r: $(grep -E '^  fp4 plan|^    scores' $OUT/cur.txt | sed -E 's/ +/ /g' | cut -c1-120 | tr '\n' '|')"
  done; done; rm -f $OUT/cur.txt
  cd $OUT && tar czf idx18_diag.tgz idx18_diag_*.txt && rm -f idx18_diag_*.txt; cd - >/dev/null
fi
cd $OUT && tar czf idx_ab.tgz idx_main.txt idx_new.txt && rm -f idx_main.txt idx_new.txt; cd - >/dev/null
echo "done t=$(el)"; ls $OUT
