#!/usr/bin/env bash
# Build machine side of a device call: stages stripped binaries (plus libfmt, which the GPU machine
# lacks) and commit.txt (HEAD and the tree's status) into .bin/N/N.tar.xz, for `run`'s carry
# [".bin/N"]. The working tree travels within 64 MiB: with large packages, move what the call
# does not need out for it and back after it (scripts/device_stash.sh out [--fixtures] / in).
# Usage: scripts/device_pack.sh N BINARY...   (device side: scripts/device_call_prelude.sh)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 N BINARY..." >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
N=$1; shift
S=$(mktemp -d); trap 'rm -rf "$S"' EXIT
mkdir -p "$S/lib"
for b in "$@"; do cp "$b" "$S/"; strip "$S/$(basename "$b")" || true; done
cp -a /lib/x86_64-linux-gnu/libfmt.so.9* "$S/lib/" 2>/dev/null || true
(cd "$root" && git rev-parse HEAD && git status --short | head -20) > "$S/commit.txt"
mkdir -p "$root/.bin/$N"
(cd "$S" && tar cf - ./* | xz -T2 -9e > "$root/.bin/$N/$N.tar.xz")
ls -la "$root/.bin/$N"
