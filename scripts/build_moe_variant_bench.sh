#!/usr/bin/env bash
# Builds a variant of bench_moe_linear whose moe_decode.cu and bench objects are compiled with
# extra defines (compile-time experiment knobs such as -DDSV4_MOE_RING_STAGES=3, or
# -DDSV4_MOE_TRACE), without touching the build directory: the two objects are compiled with the
# build's own nvcc lines (from `ninja -t commands`) plus the defines, then linked with the bench's
# link line, the variant moe_decode object ahead of libdsv4_backend_cuda.a so that its symbols win.
# The session-13 trace recipe (bench/kernels/results/2026-11-26_s13_moe15_NOTES.md, section 5),
# generalised.
#
# Usage: scripts/build_moe_variant_bench.sh BUILD_DIR OUT_DIR NAME "DEFINES"
#   (BUILD_DIR configured with DSV4_CUDA=ON and bench_moe_linear built once; writes OUT_DIR/NAME)
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 BUILD_DIR OUT_DIR NAME \"-DX=1 ...\"" >&2; exit 2; }
B=$(cd "$1" && pwd)
mkdir -p "$2"
O=$(cd "$2" && pwd)
name=$3
defines=$4
cd "$B"
cmds=$(ninja -t commands tests/cuda/bench_kernels/bench_moe_linear)
compile_variant() {  # object-name-substring output
  local line
  line=$(grep -F -- "-o $1" <<<"$cmds" | head -1)
  [ -n "$line" ] || { echo "no compile line for $1" >&2; exit 1; }
  line=${line//\/usr\/bin\/ccache /}
  line=$(sed -E "s# -o [^ ]+\$# -o $2#; s# -MD -MT [^ ]+ -MF [^ ]+##" <<<"$line")
  line=${line/-DNDEBUG/-DNDEBUG $defines}
  echo "$line"
  eval "$line"
}
compile_variant src/backends/cuda/CMakeFiles/dsv4_backend_cuda.dir/moe_decode.cu.o "$O/${name}_moe_decode.o"
compile_variant tests/cuda/bench_kernels/CMakeFiles/bench_moe_linear.dir/bench_moe_linear.cu.o "$O/${name}_bench.o"
link=$(grep -F -- "-o tests/cuda/bench_kernels/bench_moe_linear " <<<"$cmds" | head -1)
link=${link#: && }
link=${link% && :}
link=$(sed -E "s# tests/cuda/bench_kernels/CMakeFiles/bench_moe_linear.dir/bench_moe_linear.cu.o -o tests/cuda/bench_kernels/bench_moe_linear # $O/${name}_bench.o $O/${name}_moe_decode.o -o $O/$name #" <<<"$link")
echo "$link"
eval "$link"
echo "built $O/$name"
