#!/usr/bin/env bash
# LIN14 (session 24) device call 1 (H200): cuBLASLt block-scaled FP8 linear (wip/lin14).
# 1. bench_linear_gemm --fp8-cublaslt (engine path = main's kernels, and cuBLASLt, same process,
#    alternating, best of 2), then --fp8-cublaslt-algos (a second process: same rows + the
#    heuristic's algorithms 1..7).
# 2. parity: test_backend_ops --filter linear_fp8_cublaslt; test_gpu_model with the cuBLASLt route
#    on for every T >= 9 (DSV4_FP8_CUBLASLT_TOKENS=9,1000000), in parallel (one test_gpu_model).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-lin14; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/lin14/lin14_r1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/lin14_logs; rm -rf $L; mkdir -p $L
timeout 80 $G/bench_linear_gemm --fp8-cublaslt > $L/bench_r1.txt 2>&1; echo "exit $?" >> $L/bench_r1.txt
echo "bench r1 t=$(el)"; grep -E "ceiling|engine|refused|exit" $L/bench_r1.txt | cut -c1-170
timeout 100 $G/bench_linear_gemm --fp8-cublaslt-algos > $L/bench_algos.txt 2>&1; echo "exit $?" >> $L/bench_algos.txt
echo "bench algos t=$(el)"; grep -E "ceiling|engine|refused|exit" $L/bench_algos.txt | sed -E 's/\| w8a8 .*\| cublaslt/| lt/' | cut -c1-200
echo "== parity t=$(el)"
( timeout 100 $G/test_backend_ops --filter linear_fp8_cublaslt > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt ) &
( DSV4_FP8_CUBLASLT_TOKENS=9,1000000 timeout 100 $G/test_gpu_model > $L/gpu_model_lt.txt 2>&1; echo "exit $?" >> $L/gpu_model_lt.txt ) &
wait
for f in $L/parity.txt $L/gpu_model_lt.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-120); $(tail -1 $f)"; grep FAIL $f | head -5 | cut -c1-220; done
grep -E "nmse" $L/parity.txt | awk '{for(i=1;i<=NF;i++) if ($i ~ /^nmse=/) print $i}' | sort -t= -k2 -g | tail -3
tar czf $OUT/lin14_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
