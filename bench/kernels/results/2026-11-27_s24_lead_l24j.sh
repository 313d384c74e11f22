#!/usr/bin/env bash
# Session 24 lead, call l24j (H100): the final tree (main 68250f9, binaries .bin/l24h) on the H100: parity of the linear
# families and test_gpu_model, LIN14's cuBLASLt rows (--fp8-cublaslt) and the grouped activation lead (--grouped-lead-ab).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24h/l24h.tar.xz $G
cat $G/commit.txt
for root in /work/main /work/wt/base24; do [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"; done
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24j; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 150 --filter linear_decode,linear_decode_grouped,linear_decode_ring,linear_decode_lead &
( timeout 150 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
p fp8 230 --filter linear_decode_fp8act,linear_decode_fp8act_plans,linear_fp8_cublaslt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity t=$(el)"
timeout 100 $G/bench_linear_gemm --fp8-cublaslt > $L/fp8_cublaslt.txt 2>&1; echo "exit $?" >> $L/fp8_cublaslt.txt
echo "fp8-cublaslt t=$(el)"; grep -E "ceiling|^(fl|pro)\." $L/fp8_cublaslt.txt | cut -c1-200
timeout 60 $G/bench_linear_gemm --grouped-lead-ab > $L/glead.txt 2>&1; echo "exit $?" >> $L/glead.txt
echo "glead t=$(el)"; grep -E "^lead" $L/glead.txt | sed 's/ (+[0-9.]*%)//g' | cut -c1-260
tar czf $OUT/l24j_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
