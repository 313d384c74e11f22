#!/usr/bin/env bash
# Session 30 lead, call l30b (H200): the general-kernel records check's flake (session 29) against its suspected
# cause, cuBLAS's internal workspace pool while GEMMs run on several streams (eager decode steps with the decode
# kernels off: linear_gemm on the side branches and the main stream). Builds tests/cuda standalone twice: the tree
# (linear_gemm binds a workspace of its own after cublasSetStream) and the tree minus that fix (.bin/l30b/fix.patch
# reversed: main's linear_gemm, with test_gpu_model's --repeat-general diagnostic), then alternates
# `test_gpu_model --repeat-general 6` (the eager decode-kernels-off schedule 6 times per pool type, every run
# against the first of its type) between them; the base also under CUBLAS_WORKSPACE_CONFIG=:4096:8 (cuBLAS's
# documented deterministic setting); then the fixed tree's --only-kv-fp8, the linear_gemm parity cases and the
# whole test_gpu_model.
set -uo pipefail
nvidia-smi -L
export PATH=/usr/local/cuda/bin:$PATH
N=l30b
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
deps="$PWD/.deps/root/usr"
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a "-DCMAKE_PREFIX_PATH=$deps"
      "-Dfmt_DIR=$(find "$deps" -name fmt-config.cmake -printf '%h\n' | head -1)"
      "-Dnlohmann_json_DIR=$(find "$deps" -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)")
build() {  # tree dir, build dir
  cmake -S $1/tests/cuda -B $2 "${args[@]}" > $L/configure_$(basename $2).txt 2>&1 &&
  cmake --build $2 -j"$(nproc)" --target test_gpu_model test_backend_ops > $L/build_$(basename $2).txt 2>&1
}
B=/tmp/base; rm -rf $B; mkdir -p $B && cp -a src tests bench cmake CMakeLists.txt $B/ && (cd $B && patch -s -p1 -R < $OLDPWD/.bin/$N/fix.patch) || { echo "base tree failed"; exit 1; }
build $PWD build-fixed || { grep -E "error" $L/build_build-fixed.txt | head; save; exit 1; }
echo "fixed built t=$(el)"
build $B /tmp/build-base || { grep -E "error" $L/build_build-base.txt | head; save; exit 1; }
echo "base built t=$(el)"
rg() { grep -E "run [0-9]+:|passed" $1 | sed 's/\[gpu-kv-general\] flash-dims-3-layers *//'; }
for r in 1 2; do
  timeout -s KILL 90 /tmp/build-base/test_gpu_model --repeat-general 6 > $L/base_r$r.txt 2>&1; echo "exit $?" >> $L/base_r$r.txt
  echo "== base r$r t=$(el)"; rg $L/base_r$r.txt; save
  timeout -s KILL 90 build-fixed/test_gpu_model --repeat-general 6 > $L/fixed_r$r.txt 2>&1; echo "exit $?" >> $L/fixed_r$r.txt
  echo "== fixed r$r t=$(el)"; rg $L/fixed_r$r.txt; save
done
CUBLAS_WORKSPACE_CONFIG=:4096:8 timeout -s KILL 90 /tmp/build-base/test_gpu_model --repeat-general 6 > $L/base_wsconfig.txt 2>&1; echo "exit $?" >> $L/base_wsconfig.txt
echo "== base CUBLAS_WORKSPACE_CONFIG=:4096:8 t=$(el)"; rg $L/base_wsconfig.txt; save
for r in 1 2; do
  timeout -s KILL 60 build-fixed/test_gpu_model --only-kv-fp8 > $L/kv_r$r.txt 2>&1; echo "exit $?" >> $L/kv_r$r.txt
  echo "== fixed --only-kv-fp8 r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_r$r.txt) $(tail -2 $L/kv_r$r.txt | tr '\n' ' ')"; save
done
timeout -s KILL 120 build-fixed/test_backend_ops --filter linear_gemm,linear_gemm_repacked,linear_decode,bf16_decode_gemv > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head; save
[ $(el) -lt 430 ] && { timeout -s KILL 150 build-fixed/test_gpu_model > $L/model.txt 2>&1; echo "exit $?" >> $L/model.txt;
  echo "== test_gpu_model t=$(el): $(tail -2 $L/model.txt | tr '\n' ' ')"; grep FAIL $L/model.txt | head; save; }
echo "done t=$(el)"
