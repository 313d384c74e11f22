#!/usr/bin/env bash
# Session 26 KVFP8B: verification of the final tree (wip/kvfp8b 5eebe89, the bulk-copy branch removed
# after run 1), for the lead's call: the conversion check, parity (attention_decode_fp8 + _fold,
# attention_decode + sparse_attention, test_gpu_model --only-kv-fp8), --kv-fp8-ab of main's
# bench_attention and this one alternating (two processes each).
# Call: run(command="bash .bin/kvfp8b_verify/kvfp8b_v1.sh", carry=[".bin/kvfp8b_verify", ".deps"], timeout_s=200)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-kvfp8bv; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/kvfp8b_verify/kvfp8b_v1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/kvfp8bv_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/kvfp8bv_logs.tgz -C $L . 2>/dev/null; }
timeout 30 $G/bench_attention --fp8-convert-check > $L/convert_check.txt 2>&1; echo "rc=$?" >> $L/convert_check.txt
grep -E "convert check|rc=" $L/convert_check.txt
(timeout 150 $G/test_backend_ops --filter attention_decode_fp8,attention_decode_fold > $L/parity_fp8.txt 2>&1; echo "exit $?" >> $L/parity_fp8.txt) &
(timeout 150 $G/test_backend_ops --filter attention_decode,sparse_attention > $L/parity_attn.txt 2>&1; echo "exit $?" >> $L/parity_attn.txt) &
(timeout 150 $G/test_gpu_model --only-kv-fp8 > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt) &
wait
for f in parity_fp8 parity_attn; do
  echo "== $f: $(grep -c ' OK' $L/$f.txt) OK, $(grep -c FAIL $L/$f.txt) FAIL; $(grep -E 'passed|failed' $L/$f.txt | tail -1); $(tail -1 $L/$f.txt)"
  grep FAIL $L/$f.txt | head -5 | cut -c1-250
done
echo "== gpu_model: $(grep -E 'passed|failed|differ' $L/gpu_model.txt | tail -3 | tr '\n' ' ') $(tail -1 $L/gpu_model.txt)"
echo "parity done t=$(el)"; save
ab() {  # ab BIN TAG
  timeout 80 $G/$1 --kv-fp8-ab > $L/ab_$2.txt 2>&1; echo "ab $2 rc=$? t=$(el)"
  grep -E 'fp8/bf16' $L/ab_$2.txt | sed -E 's/ +/ /g' | cut -c1-170
}
ab bench_attention_base base_r1; save
ab bench_attention new_r1; save
ab bench_attention new_r2; save
ab bench_attention_base base_r2; save
echo "done t=$(el)"; ls -la $OUT
