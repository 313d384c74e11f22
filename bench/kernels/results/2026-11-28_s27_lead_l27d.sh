#!/usr/bin/env bash
# Session 27 lead, call l27d: FP8 records' fast conversion (PRMT pairs, 2^120 folded into the scale; a block holding a
# NaN gets scale 0xff) + BF16 head / wo_a dispatch + side branches. Convert check; parity of the records' families;
# --only-kv-fp8; bench_attention --kv-fp8-ab base / new / new / base; test_gpu_model --only-repacked new / base / new / base.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l27d/l27d.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l27d; rm -rf $L; mkdir -p $L/e2e; save() { tar czf $OUT/l27d_logs.tgz -C $L . 2>/dev/null; }
timeout 30 $G/bench_attention --fp8-convert-check > $L/convert_check.txt 2>&1; echo "rc=$?" >> $L/convert_check.txt; cat $L/convert_check.txt | grep -E "convert|rc="
timeout 150 $G/test_backend_ops --filter attention_decode_fp8,attention_decode_fold,kv_record_pack,kv_record_gather,kv_record_round_trip,compressor,compressor_records > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
timeout 60 $G/test_gpu_model --only-kv-fp8 > $L/gpu_model_kvfp8.txt 2>&1; echo "exit $?" >> $L/gpu_model_kvfp8.txt
echo "== kvfp8 t=$(el): $(tail -2 $L/gpu_model_kvfp8.txt | tr '\n' ' ')"; grep -E "FAIL|differ|decode step" $L/gpu_model_kvfp8.txt | cut -c1-250; save
ab() { timeout 70 $G/$1 --kv-fp8-ab > $L/ab_$2.txt 2>&1; echo "ab $2 rc=$? t=$(el)"; grep -E 'fp8/bf16' $L/ab_$2.txt | sed -E 's/ +/ /g' | cut -c1-170; save; }
ab bench_attention_base base_r1; ab bench_attention new_r1; ab bench_attention new_r2; ab bench_attention_base base_r2
for r in 1 2; do for b in new base; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(tail -2 $L/e2e/${b}_r$r.txt | tr '\n' ' ')"; grep -E "FAIL|repacked 0|decode step \(batch" $L/e2e/${b}_r$r.txt | grep -E "repacked-experts.*decode|side-branches.*decode|FAIL" | cut -c1-250; save
done; done
echo "done t=$(el)"
