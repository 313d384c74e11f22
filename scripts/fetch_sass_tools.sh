#!/usr/bin/env bash
# cuobjdump and nvdisasm for reading SASS on a machine without them (the build machine's CUDA
# toolkit lacks both): NVIDIA's PyPI wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (CUDA 13.x,
# x86-64), unpacked into .deps/sass-tools (ignored). A developer tool, not a build dependency.
#   eval "$(scripts/fetch_sass_tools.sh)"    # puts both on PATH
#   cuobjdump -xelf all build/.../moe_decode.cu.o && cuobjdump -sass moe_decode.cu.1.sm_90a.cubin
# (an object's fatbin lists its PTX first; `-sass` on the extracted cubin gives the SASS; `-res-usage`
# the registers / shared / local bytes per kernel.) SASS_TOOLS_VERSION pins a release (default: the
# newest; PyPI has 13.2 and later, which read the CUDA 13.0 toolkit's sm_90a cubins).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/sass-tools
spec="${SASS_TOOLS_VERSION:+==$SASS_TOOLS_VERSION}"
mkdir -p "$dest"
for pkg in nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; do
  tool=${pkg#nvidia-cuda-}
  if ! ls "$dest"/*/nvidia/cu13/bin/"$tool" > /dev/null 2>&1; then
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --index-url https://pypi.org/simple -d "$dest/wheels" "$pkg$spec" >&2
    python3 -c 'import sys, zipfile, glob; [zipfile.ZipFile(w).extractall(sys.argv[2]) for w in glob.glob(sys.argv[1])]' \
      "$dest/wheels/${pkg//-/_}-*.whl" "$dest/$tool"
    chmod +x "$dest/$tool"/nvidia/cu13/bin/*
  fi
done
echo "export PATH=$PWD/$dest/cuobjdump/nvidia/cu13/bin:$PWD/$dest/nvdisasm/nvidia/cu13/bin:\$PATH"
