#!/usr/bin/env bash
# Installs what is missing, builds everything (the CUDA code too when nvcc is present) and runs
# every CPU test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/configure.sh
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
