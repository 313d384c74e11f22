#!/usr/bin/env bash
# The GPU machine's one-call job: builds tests/cuda standalone (against .deps, see
# scripts/fetch_gpu_deps.sh), then runs the model on the GPU against the oracle fixtures
# (test_gpu_model), every kernel parity case (test_backend_ops) and its perf mode. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
out="${OUT:-build-gpu/logs}"
build=build-gpu
mkdir -p "$out"
deps="$PWD/.deps/root/usr"
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a "-DCMAKE_PREFIX_PATH=$deps"
      "-Dfmt_DIR=$(find "$deps" -name fmt-config.cmake -printf '%h\n' | head -1)"
      "-Dnlohmann_json_DIR=$(find "$deps" -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)")
{ date -u +%FT%TZ; git rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvcc --version | tail -1; } | tee "$out/environment.txt"
cmake -S tests/cuda -B "$build" "${args[@]}" >"$out/configure.txt" 2>&1 || { tail -30 "$out/configure.txt"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$out/build.txt" 2>&1 || { grep -E "error" "$out/build.txt" | head -30; exit 1; }
echo "== test_gpu_model"
timeout 300 "$build/test_gpu_model" 2>&1 | tee "$out/gpu_model.txt"
echo "== test_backend_ops"
timeout 400 "$build/test_backend_ops" >"$out/parity.txt" 2>&1
echo "parity exit $?"
grep -E "FAIL" "$out/parity.txt" | head -40
grep -cE " OK" "$out/parity.txt"
tail -3 "$out/parity.txt"
if [ "${PERF:-1}" = 1 ]; then
  echo "== perf"
  timeout 400 "$build/test_backend_ops" --perf >"$out/perf.txt" 2>&1
  echo "perf exit $?"
  tail -80 "$out/perf.txt"
fi
