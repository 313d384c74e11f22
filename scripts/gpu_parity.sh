#!/usr/bin/env bash
# What the GPU machine runs: builds test_backend_ops standalone (cmake -S tests/cuda: only the
# core, io, model, CPU and CUDA libraries, so no CLI11/Oniguruma/ICU/gtest) against the packages
# that scripts/fetch_gpu_deps.sh extracted into .deps/ (carry .deps to the machine), then runs the
# parity cases and the perf mode. Output is tee'd to $OUT (when set) as parity.txt and perf.txt.
# Exit status: non-zero if the build, any parity case or the perf run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build="${BUILD_DIR:-build-gpu}"
logs="${OUT:-$build}"
mkdir -p "$logs"

args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a)
deps="$PWD/.deps/root/usr"
if [ -d "$deps" ]; then
  args+=("-DCMAKE_PREFIX_PATH=$deps")
  # Named directly too: CMake searches lib/<arch>/cmake only where it knows the multiarch triple.
  fmt_dir="$(find "$deps" -type f -name fmt-config.cmake -printf '%h\n' | head -1)"
  json_dir="$(find "$deps" -type f -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)"
  [ -n "$fmt_dir" ] && args+=("-Dfmt_DIR=$fmt_dir")
  [ -n "$json_dir" ] && args+=("-Dnlohmann_json_DIR=$json_dir")
else
  echo "note: no .deps/ (scripts/fetch_gpu_deps.sh); relying on system fmt and nlohmann-json"
fi
if command -v ninja >/dev/null 2>&1; then args+=(-G Ninja); fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
    2>/dev/null || echo "nvidia-smi: unavailable"
  nvcc --version | tail -2
  cmake --version | head -1
} | tee "$logs/environment.txt"

if ! cmake -S tests/cuda -B "$build" "${args[@]}" >"$logs/configure.txt" 2>&1; then
  tail -40 "$logs/configure.txt"
  echo "gpu_parity: configure failed"
  exit 1
fi
if ! cmake --build "$build" --target test_backend_ops -j"${JOBS:-$(nproc)}" >"$logs/build.txt" 2>&1; then
  grep -E "error|Error" "$logs/build.txt" | head -40
  tail -20 "$logs/build.txt"
  echo "gpu_parity: build failed"
  exit 1
fi

binary="$build/test_backend_ops"
"$binary" 2>&1 | tee "$logs/parity.txt"
parity=${PIPESTATUS[0]}
"$binary" --perf 2>&1 | tee "$logs/perf.txt"
perf=${PIPESTATUS[0]}
echo "gpu_parity: parity exit $parity, perf exit $perf (logs in $logs)"
[ "$parity" -eq 0 ] && [ "$perf" -eq 0 ]
