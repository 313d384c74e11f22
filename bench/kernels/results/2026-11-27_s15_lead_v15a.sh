#!/usr/bin/env bash
# Session 15 lead, final verification of the merged main: parity of every family touched this
# session (moe_decode: MOE19's x-load placement; official-order redraw: chain31, moe_official,
# moe_prefill_official; attention: ATTN19's bf16 partials; prefill ws: PREFILL9), test_gpu_model,
# then main's figures (MoE decode, W4A16 prefill ws, attention focus).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p build-gpu && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$PREBUILT" build-gpu
root="$(cat build-gpu/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
(timeout 200 build-gpu/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 200 build-gpu/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_chain31 --filter moe_decode_official_repacked_chain31,moe_official &
run b_orp --filter moe_decode_official_repacked &
run c_rp --filter moe_decode_repacked &
run d_plain --filter moe_decode,moe_decode_official &
run e_chains --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_rt2_chain383,moe_decode_official_repacked_rt8_chain383,moe_decode_official_repacked_xs_chain383,moe_decode_official_repacked_rtf10_chain383,moe_decode_official_repacked_chain255,moe_decode_official_repacked_chain127,moe_decode_official_repacked_chain63,moe_decode_official_repacked_xs,moe_decode_official_repacked_q4,moe_decode_official_repacked_xs_sp2,moe_decode_official_repacked_chain15,moe_decode_official_repacked_chain7,moe_decode_official_repacked_chain5,moe_decode_repacked_chain5 &
run f_attn --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention &
run g_ws --filter moe_prefill_wgmma_ws,moe_prefill_official_wgmma_ws,moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked &
run h_pofficial --filter moe_prefill_official,moe_prefill_official_wgmma --per-op 10 &
wait
wait $m
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(tail -1 $f)"; grep FAIL $f | head -3; done
grep -E "redraw|draws" $P/*.txt | head
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
B=build-gpu/bench_kernels
timeout 150 $B/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 > $OUT/bench_decode.txt 2>&1; echo "decode exit $?"
grep -E "read-only kernel  4096|%read|rp official" $OUT/bench_decode.txt | head -20
timeout 90 $B/bench_attention --focus > $OUT/bench_attn_focus.txt 2>&1; echo "attn exit $?"
grep -E "ceiling|read|plan" $OUT/bench_attn_focus.txt | head -30
timeout 120 $B/bench_moe_linear --prefill-ws --formats mxfp4 > $OUT/bench_prefill_ws.txt 2>&1; echo "prefill-ws exit $?"
tail -25 $OUT/bench_prefill_ws.txt
