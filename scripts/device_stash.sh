#!/usr/bin/env bash
# Moves tracked files a device call does not need out of the working tree and back, so that the
# tree plus the carried package stays under the device tool's 64 MiB: the bench logs and notes in
# bench/kernels/results (the call scripts, *.sh, stay) and, with --fixtures, the text fixtures
# tests/fixtures/text/deepseek_v4_tokenizer.json and deepseek_v4_oracle.jsonl (the GPU binaries'
# tests ran without them). Never commit between `out` and `in`: the moved files read as deleted.
#
# Usage: scripts/device_stash.sh out [--fixtures] | in | status
#   stash folder: $DSV4_DEVICE_STASH, default <repository>/../.dsv4_device_stash
set -euo pipefail
root=$(git rev-parse --show-toplevel)
stash=${DSV4_DEVICE_STASH:-$root/../.dsv4_device_stash}
tracked_mb() {
  (cd "$root" && git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {printf "%.1f", s / 1e6}')
}
case "${1:-}" in
  out)
    [ -e "$stash" ] && { echo "device_stash: $stash exists (run 'in' first)" >&2; exit 1; }
    mkdir -p "$stash"
    (cd "$root" && git ls-files bench/kernels/results | grep -v '\.sh$' || true) >"$stash/.list"
    if [ "${2:-}" = "--fixtures" ]; then
      printf '%s\n' tests/fixtures/text/deepseek_v4_tokenizer.json \
        tests/fixtures/text/deepseek_v4_oracle.jsonl >>"$stash/.list"
    fi
    while IFS= read -r f; do
      [ -e "$root/$f" ] || continue
      mkdir -p "$stash/$(dirname "$f")"
      mv "$root/$f" "$stash/$f"
    done <"$stash/.list"
    echo "device_stash: $(wc -l <"$stash/.list") files out; tracked files present: $(tracked_mb) MB"
    ;;
  in)
    [ -f "$stash/.list" ] || { echo "device_stash: nothing stashed at $stash" >&2; exit 1; }
    while IFS= read -r f; do
      [ -e "$stash/$f" ] || continue
      [ -e "$root/$f" ] && { echo "device_stash: $f exists in the tree; left in $stash" >&2; continue; }
      mkdir -p "$root/$(dirname "$f")"
      mv "$stash/$f" "$root/$f"
    done <"$stash/.list"
    left=$(find "$stash" -type f ! -name .list | wc -l)
    [ "$left" -eq 0 ] && rm -rf "$stash"
    echo "device_stash: back; $left files left in the stash; tracked files present: $(tracked_mb) MB"
    ;;
  status)
    echo "tracked files present: $(tracked_mb) MB; stash: $([ -e "$stash" ] && echo "$stash (out)" || echo none)"
    ;;
  *)
    echo "usage: $0 out [--fixtures] | in | status" >&2
    exit 2
    ;;
esac
