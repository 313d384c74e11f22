#!/usr/bin/env bash
# Session 24 lead, call l24m (H200, then H100): ec8159a (W8A8's two-n-tile lead by default; linear_fp8_input's 9-16-token
# rule): parity of the fp8act families and test_gpu_model, then --fp8-cublaslt (engine = the path before LIN14; w8a8 =
# linear_decode_fp8act's default plan, now with the lead at 9-16 tokens; cuBLASLt), one process.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24m/l24m.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24m; rm -rf $L; mkdir -p $L
( timeout 150 $G/test_backend_ops --filter linear_decode_fp8act,linear_decode_fp8act_plans > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt ) &
( timeout 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt ) &
wait
for f in parity gpu_model; do echo "== $f: $(grep -c ' OK' $L/$f.txt) OK, $(grep -c FAIL $L/$f.txt) FAIL; $(tail -2 $L/$f.txt | tr '\n' ' ')"; grep FAIL $L/$f.txt | head -3 | cut -c1-200; done
echo "parity t=$(el)"
timeout 150 $G/bench_linear_gemm --fp8-cublaslt > $L/fp8_cublaslt.txt 2>&1; echo "exit $?" >> $L/fp8_cublaslt.txt
echo "fp8-cublaslt t=$(el)"; grep -E "ceiling| (9|16|32) \|" $L/fp8_cublaslt.txt | cut -c1-200
tar czf $OUT/l24m_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
