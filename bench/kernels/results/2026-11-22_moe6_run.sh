#!/usr/bin/env bash
# MOE6 GPU runs: build tests/cuda standalone (test_backend_ops, bench_moe_linear), parity of the
# new entry points (PARITY_FILTERS, one process each, PARITY_S seconds), then the decode bench
# (BENCH_ARGS, BENCH_S seconds). Logs in $OUT.
# Run 1: PARITY_FIRST=0 BENCH_ARGS="" PARITY_FILTERS="moe_decode_repacked_bulk moe_decode_official_repacked_bulk"
# Run 2: PARITY_FIRST=1 BENCH_ARGS="--decode-variants repacked,paired --decode-acts bf16"
#        PARITY_FILTERS="moe_decode_repacked_paired moe_decode_official_repacked_paired"
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
deps="$PWD/.deps/root/usr"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $O/env.txt
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a "-DCMAKE_PREFIX_PATH=$deps"
  "-Dfmt_DIR=$(find "$deps" -name fmt-config.cmake -printf '%h\n' | head -1)"
  "-Dnlohmann_json_DIR=$(find "$deps" -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)")
t0=$(date +%s)
cmake -S tests/cuda -B build-gpu "${args[@]}" > $O/cfg.txt 2>&1 || { tail -20 $O/cfg.txt; exit 1; }
ninja -C build-gpu -j16 bench_moe_linear test_backend_ops > $O/build.txt 2>&1 || { grep -E "error" $O/build.txt | head -20; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=build-gpu/bench_kernels/bench_moe_linear
P=build-gpu/test_backend_ops
parity() {
  t1=$(date +%s)
  for f in ${PARITY_FILTERS:-moe_decode_repacked_bulk moe_decode_official_repacked_bulk}; do
    timeout ${PARITY_S:-70} stdbuf -oL $P --filter $f > $O/parity_$f.txt 2>&1 &
  done
  wait
  echo "parity $(( $(date +%s) - t1 )) s"
  for f in $O/parity_*.txt; do echo "$f: OK $(grep -cE ' OK' $f) FAIL $(grep -cE 'FAIL' $f)"; grep -E "FAIL|lost" $f | head -5; tail -1 $f; done
}
[ "${PARITY_FIRST:-0}" = 1 ] && parity
t1=$(date +%s)
timeout ${BENCH_S:-80} stdbuf -oL $B --decode-only --replays 15 ${BENCH_ARGS:-} > $O/bench.txt 2>&1; echo "bench rc $? $(( $(date +%s) - t1 )) s"
grep -E "MISMATCH|vs current:|breakdown|stage|ceiling" $O/bench.txt | grep -v "differ" | head -80
echo "checks: $(grep -c ' differ' $O/bench.txt), mismatches: $(grep -c MISMATCH $O/bench.txt)"
[ "${PARITY_FIRST:-0}" = 1 ] || parity
