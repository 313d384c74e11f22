#!/usr/bin/env bash
# Builds bench_moe_linear_trace: bench_moe_linear with moe_decode.cu and the bench compiled with
# -DDSV4_MOE_TRACE (per-block %globaltimer stamps, appended to $DSV4_MOE_TRACE_RAW; summaries by
# scripts/moe_trace_raw.py), by scripts/build_moe_variant_bench.sh (the session-13 recipe).
#
# Usage: scripts/build_moe_trace_bench.sh BUILD_DIR OUT_DIR   (BUILD_DIR configured with DSV4_CUDA=ON
# and bench_moe_linear built once; writes OUT_DIR/bench_moe_linear_trace)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
exec "$(dirname "$0")/build_moe_variant_bench.sh" "$1" "$2" bench_moe_linear_trace -DDSV4_MOE_TRACE
