#!/usr/bin/env bash
# Run on a Debian 12 machine with apt (not on the GPU machine, which has no Debian packages):
# downloads the packages test_backend_ops builds against (fmt, nlohmann-json) and extracts them
# into .deps/root (git-ignored), for scripts/gpu_session.sh to find through CMAKE_PREFIX_PATH.
# libfmt9 is there because libfmt-dev's CMake package checks that libfmt.so resolves, though the
# harness uses fmt header-only.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps/debs .deps/root
mkdir -p .deps/debs .deps/root
(cd .deps/debs && apt-get download libfmt-dev libfmt9 nlohmann-json3-dev)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
echo "extracted into .deps/root:"
ls .deps/debs
