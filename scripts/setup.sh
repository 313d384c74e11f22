#!/usr/bin/env bash
# Fresh Debian 12 machine: install what is missing, build, and generate with the bundled tiny
# model (random weights: the ids are meaningless, the run shows the whole engine working).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/configure.sh
cmake --build build --target dsv4 -j"$(nproc)"
./build/src/dsv4 inspect --model tests/fixtures/models/mixed_small || true
./build/src/dsv4 generate --model tests/fixtures/models/mixed_small --prompt-ids 0,17,42,99 -n 16 \
  --temperature 0.8 --top-p 0.95 --seed 1
