#!/usr/bin/env bash
# Configures build/ with the CUDA backend (sm_90a) when nvcc is available, CPU-only otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
cuda=OFF
if command -v nvcc >/dev/null 2>&1; then cuda=ON; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=$cuda \
  -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null
echo "configured build/ (DSV4_CUDA=$cuda)"
