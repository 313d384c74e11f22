#!/usr/bin/env bash
# Session 16 lead, final tree (62b7c17): moe_decode split (host code moved; SASS identical),
# moe_swiglu halves (SASS identical), w4a8_ws descriptor base from sw128_desc (SASS changed in the
# per-item set-up): test_gpu_model, parity of the engine-path decode families, w4a8_ws, ws_repacked,
# and one --prefill-w4a8 run (bit check against the w4a8 core).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v16b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 100 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 45 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_chain --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_chain31,moe_official,moe_decode_official_repacked_xs_chain383 &
run b_orp --filter moe_decode_official_repacked,moe_decode_repacked &
run c_w4a8 --filter moe_prefill_official_w4a8_ws --per-op 14 &
run d_ws_rp --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 8 &
run e_moe --filter moe_decode,moe_decode_official --per-op 6 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
timeout 40 $G/bench_kernels/bench_moe_linear --prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096 > $OUT/w4a8.txt 2>&1; echo "w4a8 rc=$? t=$(el)"
grep -E "w4a8_ws|differ" $OUT/w4a8.txt | sed -E 's/ +/ /g' | cut -c1-150
