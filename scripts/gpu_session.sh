#!/usr/bin/env bash
# The GPU machine's checks, in two phases that fit one device call each (the build directory
# stays on a warm machine between them):
#   PHASE=parity  build tests/cuda standalone (against .deps), then every kernel parity case
#                 (test_backend_ops; PARITY_ARGS passes e.g. --filter, PARITY_TIMEOUT seconds);
#   PHASE=model   the whole model against the oracle fixtures, graphs and decode kernels
#                 (test_gpu_model);
#   PHASE=bench   the real-dimension parity script (f32 and bf16) and the kernel benchmarks
#                 (bench_moe_linear, bench_linear_gemm, bench_attention) with their ceilings;
#   PHASE=one     with BENCH="<binary> [args]": one benchmark binary of bench_kernels only;
#   PHASE=perf    test_backend_ops --perf (every case timed against the copy ceiling);
#   PHASE=sanitize compute-sanitizer (SANITIZER_TOOL, default memcheck) over test_backend_ops with
#                 PARITY_ARGS (use --filter and --per-op N: under the sanitizer a case runs ~100x slower).
# Logs go to $OUT (or build-gpu/logs).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
out="${OUT:-build-gpu/logs}"
build=build-gpu
mkdir -p "$out"
deps="$PWD/.deps/root/usr"
{ date -u +%FT%TZ; git rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvcc --version | tail -1; } | tee "$out/environment.txt"
if [ ! -x "$build/test_backend_ops" ] || [ "${REBUILD:-0}" = 1 ]; then
  args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a "-DCMAKE_PREFIX_PATH=$deps"
        "-Dfmt_DIR=$(find "$deps" -name fmt-config.cmake -printf '%h\n' | head -1)"
        "-Dnlohmann_json_DIR=$(find "$deps" -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)")
  t0=$(date +%s)
  cmake -S tests/cuda -B "$build" "${args[@]}" >"$out/configure.txt" 2>&1 || { tail -30 "$out/configure.txt"; exit 1; }
  cmake --build "$build" -j"$(nproc)" >"$out/build.txt" 2>&1 || { grep -E "error" "$out/build.txt" | head -30; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
case "${PHASE:-parity}" in
  one)
    # BENCH="name [args]": the binary's name names the log.
    read -r -a bench_cmd <<<"$BENCH"
    log="$out/${bench_cmd[0]}.txt"
    echo "== $BENCH"
    timeout "${BENCH_TIMEOUT:-200}" "$build/bench_kernels/${bench_cmd[0]}" "${bench_cmd[@]:1}" >"$log" 2>&1
    echo "$BENCH exit $?"
    tail -80 "$log"
    ;;
  parity)
    echo "== test_backend_ops"
    timeout "${PARITY_TIMEOUT:-480}" "$build/test_backend_ops" ${PARITY_ARGS:-} >"$out/parity.txt" 2>&1
    echo "parity exit $?"
    grep -E "FAIL" "$out/parity.txt" | head -40
    echo "OK cases: $(grep -cE " OK" "$out/parity.txt")"
    tail -3 "$out/parity.txt"
    ;;
  model)
    echo "== test_gpu_model"
    timeout 240 "$build/test_gpu_model" >"$out/gpu_model.txt" 2>&1
    echo "gpu_model exit $?"
    grep -vE "^\[gpu-model\].*(device memory)" "$out/gpu_model.txt" | tail -60
    ;;
  sanitize)
    tool="${SANITIZER_TOOL:-memcheck}"
    echo "== compute-sanitizer --tool $tool test_backend_ops ${PARITY_ARGS:-}"
    timeout "${SANITIZE_TIMEOUT:-400}" compute-sanitizer --tool "$tool" --error-exitcode 3 \
      "$build/test_backend_ops" ${PARITY_ARGS:-} >"$out/sanitize_$tool.txt" 2>&1
    echo "sanitize ($tool) exit $?"
    grep -E "FAIL|ERROR SUMMARY|Invalid|race|uninitialized" "$out/sanitize_$tool.txt" | head -20
    echo "OK cases: $(grep -cE " OK" "$out/sanitize_$tool.txt")"
    tail -3 "$out/sanitize_$tool.txt"
    ;;
  perf)
    timeout 500 "$build/test_backend_ops" --perf >"$out/perf.txt" 2>&1
    echo "perf exit $?"
    tail -80 "$out/perf.txt"
    ;;
  bench)
    echo "== real dims"
    PYTHONUNBUFFERED=1 timeout 200 python3 scripts/gpu_real_dims_parity.py "$build" >"$out/real_dims.txt" 2>&1
    echo "real dims exit $?"
    tail -12 "$out/real_dims.txt"
    echo "== bench_moe_linear"
    timeout 400 "$build/bench_kernels/bench_moe_linear" >"$out/bench_moe_linear.txt" 2>&1
    echo "bench_moe_linear exit $?"
    tail -40 "$out/bench_moe_linear.txt"
    echo "== bench_linear_gemm"
    timeout 150 "$build/bench_kernels/bench_linear_gemm" >"$out/bench_linear_gemm.txt" 2>&1
    echo "bench_linear_gemm exit $?"
    tail -60 "$out/bench_linear_gemm.txt"
    echo "== bench_attention"
    timeout 150 "$build/bench_kernels/bench_attention" >"$out/bench_attention.txt" 2>&1
    echo "bench_attention exit $?"
    tail -40 "$out/bench_attention.txt"
    ;;
esac
