#!/usr/bin/env bash
# Session 35 lead, call l35a (H200): issue 6's verification on main 92958ce's binaries (the tree the closing figures
# are for): every issue-6 parity family (attention decode / fold / FP8 records / sparse attention, the indexer
# families, the compressor and KV records) in parallel, then compute-sanitizer memcheck and racecheck on a few cases
# of each attention / indexer / compressor family. (test_gpu_model and the benches: call l35b; the carry limit takes
# one of the two 14 MB test binaries per call.)
set -uo pipefail
nvidia-smi -L
N=l35a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
F=("attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention" "indexer_fast,indexer_fast_fp8,indexer_topk,indexer_fp4_pack" "indexer_fast_fp4" "indexer_fast_fp4_list,indexer_fast_fp4_three" "compressor,compressor_records,kv_record_gather,kv_record_pack,kv_record_round_trip")
i=0; for f in "${F[@]}"; do timeout -s KILL 240 $G/test_backend_ops --filter "$f" > $L/ops$i.txt 2>&1 & i=$((i+1)); done; wait
i=0; for f in "${F[@]}"; do echo "== ops$i ($f) t=$(el): $(grep -c ' OK' $L/ops$i.txt) OK, $(grep -c FAIL $L/ops$i.txt) FAIL; $(tail -1 $L/ops$i.txt)"; grep FAIL $L/ops$i.txt | head -5 | cut -c1-220; i=$((i+1)); done; save
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $CS"
if [ -n "$CS" ]; then
  for tool in memcheck racecheck; do
    for f in attention_decode attention_decode_fp8 indexer_fast_fp4_three compressor; do
      timeout -s KILL 100 $CS --tool $tool --error-exitcode 9 $G/test_backend_ops --filter $f --per-op 3 > $L/san_${tool}_$f.txt 2>&1; rc=$?
      echo "== $tool $f rc=$rc t=$(el): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$f.txt | tail -1) | $(grep -E 'cases passed' $L/san_${tool}_$f.txt | tail -1)"
      save
      [ $(el) -gt 540 ] && break 2
    done
  done
fi
echo "done t=$(el)"
