#!/usr/bin/env bash
# Builds bench_moe_linear_trace: bench_moe_linear with moe_decode.cu and the bench compiled with
# -DDSV4_MOE_TRACE (per-block %globaltimer stamps, appended to $DSV4_MOE_TRACE_RAW; summaries by
# scripts/moe_trace_raw.py). The session-13 recipe (bench/kernels/results/2026-11-26_s13_moe15_NOTES.md,
# section 5) as a script: the two objects are compiled with the build's own nvcc lines (from
# `ninja -t commands`) plus the define, then linked with the bench's link line, the traced
# moe_decode object ahead of libdsv4_backend_cuda.a so that its symbols win.
#
# Usage: scripts/build_moe_trace_bench.sh BUILD_DIR OUT_DIR   (BUILD_DIR configured with DSV4_CUDA=ON
# and bench_moe_linear built once; writes OUT_DIR/bench_moe_linear_trace)
set -euo pipefail
B=$(cd "$1" && pwd)
mkdir -p "$2"
O=$(cd "$2" && pwd)
cd "$B"
cmds=$(ninja -t commands tests/cuda/bench_kernels/bench_moe_linear)
compile_traced() {  # object-name-substring output
  local line
  line=$(grep -F -- "-o $1" <<<"$cmds" | head -1)
  [ -n "$line" ] || { echo "no compile line for $1" >&2; exit 1; }
  line=${line//\/usr\/bin\/ccache /}
  line=$(sed -E "s# -o [^ ]+\$# -o $2#; s# -MD -MT [^ ]+ -MF [^ ]+##; s#-DNDEBUG#-DNDEBUG -DDSV4_MOE_TRACE#" <<<"$line")
  echo "$line"
  eval "$line"
}
compile_traced src/backends/cuda/CMakeFiles/dsv4_backend_cuda.dir/moe_decode.cu.o "$O/moe_decode_trace.o"
compile_traced tests/cuda/bench_kernels/CMakeFiles/bench_moe_linear.dir/bench_moe_linear.cu.o "$O/bench_trace.o"
link=$(grep -F -- "-o tests/cuda/bench_kernels/bench_moe_linear " <<<"$cmds" | head -1)
link=${link#: && }
link=${link% && :}
link=$(sed -E "s# tests/cuda/bench_kernels/CMakeFiles/bench_moe_linear.dir/bench_moe_linear.cu.o -o tests/cuda/bench_kernels/bench_moe_linear # $O/bench_trace.o $O/moe_decode_trace.o -o $O/bench_moe_linear_trace #" <<<"$link")
echo "$link"
eval "$link"
echo "built $O/bench_moe_linear_trace"
