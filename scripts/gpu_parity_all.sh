#!/usr/bin/env bash
# The whole test_backend_ops parity run (or a sanitizer pass over it) through
# scripts/gpu_parity_parallel.sh: the ops of `test_backend_ops --list` dealt into GROUPS filters
# balanced by case count (largest first, each to the lightest group; with --per-op K an op counts
# at most K cases), one process each.
#   scripts/gpu_parity_all.sh GROUPS SECONDS [test_backend_ops args...]
#   SANITIZER="compute-sanitizer --tool memcheck" scripts/gpu_parity_all.sh 4 150 --per-op 1
# TEST_BIN, SANITIZER, OUT: as gpu_parity_parallel.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
groups="$1"
limit="$2"
shift 2
bin="${TEST_BIN:-build-gpu/test_backend_ops}"
per_op=0
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
  [ "${args[$i]}" = "--per-op" ] && per_op="${args[$((i + 1))]}"
done
list=$("$bin" --list) || {
  echo "gpu_parity_all: $bin --list failed"
  exit 1
}
echo "gpu_parity_all: $(awk '{s += $2} END {print s}' <<<"$list") cases listed"
mapfile -t filters < <(sort -k2,2nr <<<"$list" | awk -v n="$groups" -v cap="$per_op" '
  { c = $2; if (cap > 0 && c > cap) c = cap
    b = 0; for (i = 1; i < n; i++) if (s[i] < s[b]) b = i; s[b] += c; g[b] = g[b] (g[b] == "" ? "" : ",") $1 }
  END { for (i = 0; i < n; i++) if (g[i] != "") print g[i] }')
specs=()
for f in "${filters[@]}"; do specs+=("$f $*"); done
exec bash scripts/gpu_parity_parallel.sh "$limit" "${specs[@]}"
