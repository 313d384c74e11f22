#!/usr/bin/env bash
# Packs the GPU test and bench binaries of a build made on this (Debian 12) machine for the GPU
# machine, so a device call skips its own 70-90 s build (binaries built here ran there on
# 2026-11-26: its image is newer, ldd resolves everything but libfmt, which .deps provides).
#   bash scripts/pack_gpu_binaries.sh BUILD_DIR OUT.tgz|OUT.tar.xz [FILE ...]
# FILEs (relative to BUILD_DIR) limit what is packed (the carry limit is 64 MiB with the tree);
# default: test_backend_ops, test_gpu_model, gpu_logits and every bench_kernels binary.
# BUILD_DIR: build-cuda/tests/cuda (the main build) or a standalone tests/cuda build. The tarball
# also records the source root that test_gpu_model's fixture path was compiled against
# (source_root.txt), which gpu_report.sh links to the tree on the device.
set -euo pipefail
build="$1"
out="$(realpath -m "$2")"
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$build"
echo "$root" >source_root.txt
files=(source_root.txt)
wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(test_backend_ops test_gpu_model gpu_logits bench_kernels/bench_*)
for f in "${wanted[@]}"; do
  [ -f "$f" ] && [ -x "$f" ] && files+=("$f")
done
if [[ "$out" == *.tar.xz ]]; then  # ~30% smaller than gzip on these binaries (carry limit)
  tar cf - "${files[@]}" | xz -T2 -6 >"$out"
else
  tar czf "$out" "${files[@]}"
fi
echo "packed ${files[*]} into $out ($(du -h "$out" | cut -f1))"
