#!/usr/bin/env bash
# One device call that verifies the tree and measures every kernel family on the machine it runs
# on (used for the H100 reports): build tests/cuda, then test_gpu_model beside parity filters
# (CPU references on the other cores), then the benchmarks one at a time (each alone on the GPU),
# every step under its own time limit so that the call ends inside the device tool's limit.
#   PARITY="filterA filterB,filterC" BENCHES="..." bash scripts/gpu_report.sh
# PREBUILT=file.tgz or file.tar.xz (scripts/pack_gpu_binaries.sh, carried): unpack those binaries
# into build-gpu instead of building there.
# Logs in $OUT (or build-gpu/logs); a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-build-gpu/logs}"
mkdir -p "$out"
if [ -n "${PREBUILT:-}" ]; then
  mkdir -p build-gpu
  if [[ "$PREBUILT" == *.xz ]]; then  # python's lzma: the GPU machine may lack the xz tool
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$PREBUILT" build-gpu || { echo "cannot unpack $PREBUILT"; exit 1; }
  else
    tar xzf "$PREBUILT" -C build-gpu || { echo "cannot unpack $PREBUILT"; exit 1; }
  fi
  export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  # test_gpu_model reads its fixtures through the source root it was compiled in.
  root="$(cat build-gpu/source_root.txt)"
  if [ "$root" != "$PWD" ] && [ ! -e "$root" ]; then
    mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
  fi
  { date -u +%FT%TZ; git rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } >"$out/environment.txt"
  echo "prebuilt: $PREBUILT"
else
  PHASE=none bash scripts/gpu_session.sh >"$out/session.txt" 2>&1
  grep -E "build:|error" "$out/session.txt" | head -5
fi
[ -x build-gpu/test_backend_ops ] || { echo "build failed"; tail -20 "$out/session.txt"; exit 1; }
(timeout "${MODEL_TIMEOUT:-240}" build-gpu/test_gpu_model >"$out/gpu_model.txt" 2>&1
 echo "exit $?" >>"$out/gpu_model.txt") &
model=$!
read -r -a filters <<<"${PARITY:-}"
status=0
if [ "${#filters[@]}" -gt 0 ]; then
  bash scripts/gpu_parity_parallel.sh "${PARITY_TIMEOUT:-240}" "${filters[@]}" || status=1
fi
wait "$model"
echo "== test_gpu_model: $(grep -E "passed, [0-9]+ failed" "$out/gpu_model.txt" | tail -1); $(tail -1 "$out/gpu_model.txt")"
grep -qE " 0 failed" "$out/gpu_model.txt" || status=1
# BENCHES: ';'-separated "binary args" entries, each run with BENCH_TIMEOUT (default 120 s).
IFS=';' read -r -a benches <<<"${BENCHES:-}"
for b in "${benches[@]}"; do
  read -r -a cmd <<<"$b"
  [ "${#cmd[@]}" -gt 0 ] || continue
  log="$out/$(echo "${cmd[*]}" | tr ' ,' '__' | tr -d '-' | cut -c1-120).txt"  # no commas: the device tool drops such names
  timeout "${BENCH_TIMEOUT:-120}" "build-gpu/bench_kernels/${cmd[0]}" "${cmd[@]:1}" >"$log" 2>&1
  echo "== ${cmd[*]}: exit $?, $(wc -l <"$log") lines"
done
exit "$status"
