#!/usr/bin/env bash
# Session 24 lead, call l24h (H200): the final tree (main 68250f9: W8A8 lead + late scales, LIN12's activation lead incl.
# grouped calls, LIN14's cuBLASLt route above 8 tokens, W8A8 at 9-32 tokens on short-row long-K projections).
# 1. parity in parallel: linear_decode families | fp8 families (fp8act, plans, cublaslt) | test_gpu_model
# 2. the model's decode step, session 23's tree (5fd1a0e) vs this one: test_gpu_model --only-repacked, alternating, twice
# 3. bench_linear_gemm --decode-only and --fp8-cublaslt (final figures)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24h/l24h.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24h; rm -rf $L; mkdir -p $L/parity $L/e2e
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 150 --filter linear_decode,linear_decode_grouped,linear_decode_ring,linear_decode_lead &
p fp8 150 --filter linear_decode_fp8act,linear_decode_fp8act_plans,linear_fp8_cublaslt &
( timeout 130 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity t=$(el)"
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';')"
done; done
timeout 120 $G/bench_linear_gemm --decode-only > $L/decode_only.txt 2>&1; echo "exit $?" >> $L/decode_only.txt
echo "decode-only t=$(el)"; grep -E "^(fl|pro)\.(wq_b|wo_b) .* (1|8|16|32|64) \|" $L/decode_only.txt | awk -F'|' '{printf "%s |%s|%s\n", substr($1,1,44), $3, $4}' | cut -c1-150
timeout 150 $G/bench_linear_gemm --fp8-cublaslt > $L/fp8_cublaslt.txt 2>&1; echo "exit $?" >> $L/fp8_cublaslt.txt
echo "fp8-cublaslt t=$(el)"; grep -E "^(fl|pro)\.(wq_b|wo_b|wq_a)" $L/fp8_cublaslt.txt | cut -c1-200
tar czf $OUT/l24h_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
