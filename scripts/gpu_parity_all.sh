#!/usr/bin/env bash
# The whole test_backend_ops parity run (or a sanitizer pass over it) through
# scripts/gpu_parity_parallel.sh: the ops of `test_backend_ops --list` dealt into GROUPS filters
# balanced by case count (largest first, each to the lightest group; with --per-op K an op counts
# at most K cases), one process each.
#   scripts/gpu_parity_all.sh GROUPS SECONDS [test_backend_ops args...]
#   SANITIZER="compute-sanitizer --tool memcheck" scripts/gpu_parity_all.sh 4 150 --per-op 1
# TEST_BIN, SANITIZER, OUT: as gpu_parity_parallel.sh. OPS: an extended regex; only the ops whose
# whole name matches it (e.g. OPS='linear.*|grouped_linear|moe_.*' for issue 5's kernels).
# BY=cases: the cases of `--list-cases` dealt round-robin into GROUPS `--cases` shards instead of
# whole ops (neighbouring cases of one op cost alike, so the heavy runs spread over every process;
# session 36: op groups left the MoE prefill groups running long after the others). SKIP: files
# of earlier parity logs; their cases (op and shape of an OK line) are left out (BY=cases only).
# With BY=cases the logs go to $OUT/pass1; the cases that failed only because cudaMalloc found no
# device memory (several large cases at once in 16 processes: l36c) run again in GROUPS / 4
# processes ($OUT/pass2), and the verdict is then the second pass's (a timeout or any other FAIL
# in the first pass still fails the run).
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
if [ -n "${OPS:-}" ]; then
  list=$(awk -v re="^(${OPS})\$" '$1 ~ re' <<<"$list")
  [ -n "$list" ] || {
    echo "gpu_parity_all: no op matches OPS='$OPS'"
    exit 1
  }
fi
echo "gpu_parity_all: $(awk '{s += $2} END {print s}' <<<"$list") cases listed"
mapfile -t filters < <(sort -k2,2nr <<<"$list" | awk -v n="$groups" -v cap="$per_op" '
  { c = $2; if (cap > 0 && c > cap) c = cap
    b = 0; for (i = 1; i < n; i++) if (s[i] < s[b]) b = i; s[b] += c; g[b] = g[b] (g[b] == "" ? "" : ",") $1 }
  END { for (i = 0; i < n; i++) if (g[i] != "") print g[i] }')
specs=()
if [ "${BY:-ops}" = cases ]; then
  all_ops=$(awk '{print $1}' <<<"$list" | paste -sd,)
  done_keys=$(cat ${SKIP:-/dev/null} 2>/dev/null |
    sed -nE 's/^ +([^ ]+) +(.*[^ ]) +nmse=[^ ]+ +OK.*/\1 \2/p' | sort -u)
  # shards N KEEP SKIP: the positions of --list-cases whose "op shape" is (KEEP = 1) or is not
  # (KEEP = 0) among the lines of SKIP, dealt round-robin into at most N comma lists.
  shards() {
    "$bin" --list-cases | awk -v n="$1" -v keep="$2" -v ops=",$all_ops," '
      FNR == NR { sel[$0] = 1; next }
      index(ops, "," $2 ",") { k = $0; sub(/^[0-9]+ /, "", k); sub(/ +$/, "", k)
        if ((k in sel) == keep) { s = m % n; g[s] = g[s] (g[s] == "" ? "" : ",") $1; m++ } }
      END { for (i = 0; i < n; i++) if (g[i] != "") print g[i] }' <(printf '%s\n' "$3") -
  }
  mapfile -t cases < <(shards "$groups" 0 "$done_keys")
  echo "gpu_parity_all: ${#cases[@]} shards of the cases not in SKIP"
  for c in "${cases[@]}"; do specs+=("$all_ops --cases $c $*"); done
  out="${OUT:-build-gpu/logs}"
  OUT="$out/pass1" bash scripts/gpu_parity_parallel.sh "$limit" "${specs[@]}"
  status=$?
  oom_keys=$(cat "$out"/pass1/*.txt | grep -E "FAIL exception: .*cudaErrorMemoryAllocation" |
    sed -nE 's/^ +([^ ]+) +(.*[^ ]) +nmse=[^ ]+ +FAIL.*/\1 \2/p' | sort -u)
  [ "$status" -ne 0 ] && [ -n "$oom_keys" ] || exit "$status"
  # The first pass passes but for these cases when every log has its summary line and every FAIL
  # in it is one of them.
  clean=1
  for f in "$out"/pass1/*.txt; do
    grep -qE "^[0-9]+/[0-9]+ cases passed" "$f" || clean=0
    grep -E "FAIL" "$f" | grep -qvE "cudaErrorMemoryAllocation" && clean=0
  done
  retry=$((groups / 4 > 0 ? groups / 4 : 1))
  mapfile -t cases < <(shards "$retry" 1 "$oom_keys")
  echo "gpu_parity_all: $(wc -l <<<"$oom_keys") cases failed for device memory; again in ${#cases[@]} processes"
  specs=()
  for c in "${cases[@]}"; do specs+=("$all_ops --cases $c $*"); done
  OUT="$out/pass2" bash scripts/gpu_parity_parallel.sh "$limit" "${specs[@]}"
  status=$?
  [ "$clean" = 1 ] || status=1
  exit "$status"
fi
for f in "${filters[@]}"; do specs+=("$f $*"); done
exec bash scripts/gpu_parity_parallel.sh "$limit" "${specs[@]}"
