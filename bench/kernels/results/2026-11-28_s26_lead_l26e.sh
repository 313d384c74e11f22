#!/usr/bin/env bash
# Session 26 lead, call l26e: the merged tree (b480e27: hc_post_pre_norm + the FFN's FP8 copy, the small kernels as PDL
# launches, KVFP8B's records producer, W8A8W's wgmma linear at 9-64 tokens). Parity: every test_backend_ops family but
# the untouched MoE / linear_decode / linear_gemm / indexer ones | the full test_gpu_model; then --only-w8a8-wgmma,
# --only-kv-fp8; the records' conversion check; bench_attention --kv-fp8-ab main / new alternating; bench_linear_gemm
# --w8a8-wgmma; the decode step: main 6931456 / new / new with DSV4_PDL_SMALL=0, two rounds.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l26e/l26e.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l26e; rm -rf $L; mkdir -p $L/e2e $L/parity
P=$L/parity; save() { tar czf $OUT/l26e_logs.tgz -C $L . 2>/dev/null; }
EXC=moe_experts,moe_official,moe_repack,moe_layout_reject,linear_decode,linear_decode_grouped,linear_decode_lead,linear_decode_repacked,linear_decode_ring,linear_gemm,linear_gemm_repacked,grouped_linear,indexer_fast,indexer_fast_fp4,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fast_fp8,indexer_topk
( timeout 240 $G/test_backend_ops --exclude $EXC > $P/ops.txt 2>&1; echo "exit $?" >> $P/ops.txt ) &
( timeout 240 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
( timeout 60 $G/test_gpu_model --only-w8a8-wgmma > $P/gpu_model_w8a8.txt 2>&1; echo "exit $?" >> $P/gpu_model_w8a8.txt )
( timeout 60 $G/test_gpu_model --only-kv-fp8 > $P/gpu_model_kvfp8.txt 2>&1; echo "exit $?" >> $P/gpu_model_kvfp8.txt )
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -8 | cut -c1-220; done
grep -E "gpu-w8a8|differ" $P/gpu_model_w8a8.txt $P/gpu_model_kvfp8.txt | cut -c1-250 | head -8
echo "parity t=$(el)"; save
timeout 30 $G/bench_attention --fp8-convert-check > $L/convert_check.txt 2>&1; echo "rc=$?" >> $L/convert_check.txt; grep -E "convert check|rc=" $L/convert_check.txt
ab() { timeout 80 $G/$1 --kv-fp8-ab > $L/ab_$2.txt 2>&1; echo "ab $2 rc=$? t=$(el)"; grep -E 'fp8/bf16' $L/ab_$2.txt | sed -E 's/ +/ /g' | cut -c1-170; }
ab bench_attention_base base_r1; ab bench_attention new_r1; ab bench_attention new_r2; ab bench_attention_base base_r2; save
timeout 90 $G/bench_linear_gemm --w8a8-wgmma 1 > $L/w8a8_wgmma.txt 2>&1; echo "w8a8 rc=$? t=$(el)"
grep -E "ceiling|^wgmma" $L/w8a8_wgmma.txt | sed -E 's/ \| r192.*cublaslt/ | cublaslt/; s/ +/ /g' | cut -c1-200; save
for r in 1 2; do for b in base new nopdl; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  if [ $b = nopdl ]; then DSV4_PDL_SMALL=0 timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; else timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; fi
  echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';' | cut -c1-400) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
save; echo "done t=$(el)"
