#!/usr/bin/env bash
# Session 19 lead, call v19c: the final tree's attention (ATTN29 merged): parity, test_gpu_model, and --focus
# for main 4a2dd45 (base), 155a8cc (mid: ATTN28) and the final tree, alternating, two rounds.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v19c.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
timeout 120 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $OUT/parity_attn.txt 2>&1
wait
echo "== attn: $(grep -c ' OK' $OUT/parity_attn.txt) OK, $(grep -c FAIL $OUT/parity_attn.txt) FAIL; $(grep -E 'passed' $OUT/parity_attn.txt | tail -1)"; grep FAIL $OUT/parity_attn.txt | head -3 | cut -c1-200
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
echo "t=$(el)"
for r in 1 2; do for n in base mid new; do
  bin=$G/bench_attention; [ $n != new ] && bin=$G/bench_attention_$n
  timeout 40 $bin --focus > $OUT/cur.txt 2>&1; cat $OUT/cur.txt >> $OUT/focus_$n.txt
  echo "focus $n r$r t=$(el): $(grep -E '^    plan: split' $OUT/cur.txt | awk '{printf "%s ", $(NF-3)}')"
done; done; rm -f $OUT/cur.txt
cd $OUT && tar czf focus_logs.tgz focus_*.txt && rm -f focus_*.txt; cd - >/dev/null
echo "done t=$(el)"; ls $OUT
