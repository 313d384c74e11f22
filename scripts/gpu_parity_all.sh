#!/usr/bin/env bash
# The whole test_backend_ops parity run (or compute-sanitizer over it) split across processes on the
# GPU machine: the ops of `test_backend_ops --list` are dealt into N groups balanced by case count
# (largest first, each to the lightest group), one process per group, one log per group in $OUT.
# The CPU references dominate a parity run and use one core each (the machine has 16).
#   scripts/gpu_parity_all.sh BIN GROUPS SECONDS [test_backend_ops args...]
#   SANITIZER="compute-sanitizer --tool memcheck --error-exitcode 9" scripts/gpu_parity_all.sh \
#       BIN 4 150 --per-op 1
# Prints one line per group and a total; exits 1 on any FAIL, sanitizer error or unfinished group.
set -uo pipefail
bin="$1"
groups="$2"
limit="$3"
shift 3
out="${OUT:-build-gpu/logs}"
mkdir -p "$out"
list="$out/parity_list.txt"
"$bin" --list >"$list" 2>&1 || {
  echo "gpu_parity_all: $bin --list failed"
  exit 1
}
# With --per-op K an op runs at most K cases: balance on that.
per_op=0
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do [ "${args[$i]}" = "--per-op" ] && per_op="${args[$((i + 1))]}"; done
mapfile -t filters < <(sort -k2,2nr "$list" | awk -v n="$groups" -v cap="$per_op" '
  { c = $2; if (cap > 0 && c > cap) c = cap
    b = 0; for (i = 1; i < n; i++) if (s[i] < s[b]) b = i; s[b] += c; g[b] = g[b] (g[b] == "" ? "" : ",") $1 }
  END { for (i = 0; i < n; i++) if (g[i] != "") print g[i] }')
read -r -a sanitizer <<<"${SANITIZER:-}"
for i in "${!filters[@]}"; do
  timeout -s KILL "$limit" "${sanitizer[@]}" "$bin" --filter "${filters[$i]}" "$@" \
    >"$out/parity_group$i.txt" 2>&1 &
done
wait
status=0
total_ok=0
total_fail=0
for i in "${!filters[@]}"; do
  f="$out/parity_group$i.txt"
  ok=$(grep -cE " OK" "$f")
  fail=$(grep -cE "FAIL" "$f")
  total_ok=$((total_ok + ok))
  total_fail=$((total_fail + fail))
  summary=$(grep -E "^[0-9]+/[0-9]+ cases passed|ERROR SUMMARY|RACECHECK SUMMARY" "$f" | tr '\n' ' ')
  echo "== group $i: $ok OK, $fail FAIL; ${summary:-unfinished}"
  grep -E "FAIL" "$f" | head -3
  # A group passes only with its summary line (a timeout leaves none), no FAIL and, under a
  # sanitizer, no error.
  grep -qE "^[0-9]+/[0-9]+ cases passed" "$f" && ! grep -qE "FAIL" "$f" || status=1
  grep -qE "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$f" && status=1
done
echo "== total: $total_ok OK, $total_fail FAIL of $(awk '{s += $2} END {print s}' "$list") listed"
exit "$status"
