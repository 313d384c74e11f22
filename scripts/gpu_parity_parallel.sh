#!/usr/bin/env bash
# Several test_backend_ops filters at once on the GPU machine (the CPU references dominate a
# parity run and use one core each; the machine has 16): one log per filter in $OUT.
#   scripts/gpu_parity_parallel.sh SECONDS "filterA[ --per-op N]" "filterB" ...
# Run after scripts/gpu_session.sh has built build-gpu. TEST_BIN: another test_backend_ops
# (default build-gpu/test_backend_ops); SANITIZER: a command line to run each under (e.g.
# "compute-sanitizer --tool memcheck"), its error summary then part of the verdict.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-build-gpu/logs}"
bin="${TEST_BIN:-build-gpu/test_backend_ops}"
mkdir -p "$out"
read -r -a sanitizer <<<"${SANITIZER:-}"
# Log of a spec: the first op of its filter and a hash of the whole spec (a name built from a long
# list exceeded the file-name limit; commas keep a file from coming back from the device tool;
# specs that differ only in their arguments, e.g. --cases shards, get logs of their own).
log_of() {
  local first="${1%% *}"
  first="${first%%,*}"
  echo "$out/parity_${first}_$(printf '%s' "$1" | md5sum | cut -c1-8).txt"
}
limit="$1"
shift
for spec in "$@"; do
  read -r -a words <<<"$spec"
  timeout -s KILL "$limit" "${sanitizer[@]}" "$bin" --filter "${words[@]}" \
    >"$(log_of "$spec")" 2>&1 &
done
wait
status=0
total=0
for spec in "$@"; do
  read -r -a words <<<"$spec"
  f="$(log_of "$spec")"
  ok=$(grep -cE " OK" "$f")
  total=$((total + ok))
  echo "== ${words[0]%%,*}: $ok OK, $(grep -cE "FAIL" "$f") FAIL; $(grep -E "SUMMARY" "$f" | tail -1) $(tail -1 "$f")"
  grep -E "FAIL" "$f" | head -5
  # A filter passes only with its summary line (a timeout leaves none), no FAIL and, under a
  # sanitizer, no error.
  grep -qE "^[0-9]+/[0-9]+ cases passed" "$f" && ! grep -qE "FAIL" "$f" || status=1
  grep -qE "(ERROR|RACECHECK) SUMMARY: [1-9]" "$f" && status=1
done
echo "== $total cases OK"
exit "$status"
