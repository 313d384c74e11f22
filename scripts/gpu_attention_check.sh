#!/usr/bin/env bash
# Attention decode in one device call: build bench_attention, test_backend_ops and test_gpu_model,
# run the parity filters attention_decode, attention_decode_fp8 and sparse_attention beside
# test_gpu_model, then bench_attention --cases "$CASES" (ceilings + the attention_decode kernels)
# and, for each spec in NCU_CASES, ncu on the warp-specialized kernel and the combine.
#   CASES="32,64,hca,1048576,0;1,64,csa,1048576,512" NCU_CASES="32,64,hca,1048576,0" \
#   MODEL_TIMEOUT=95 PARITY_TIMEOUT=95 BENCH_TIMEOUT=45 NCU_TIMEOUT=25 bash scripts/gpu_attention_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
out="${OUT:-build-gpu/logs}"; mkdir -p "$out"
deps="$PWD/.deps/root/usr"
t0=$(date +%s)
cmake -S tests/cuda -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  "-DCMAKE_PREFIX_PATH=$deps" \
  "-Dfmt_DIR=$(find "$deps" -name fmt-config.cmake -printf '%h\n' | head -1)" \
  "-Dnlohmann_json_DIR=$(find "$deps" -name nlohmann_jsonConfig.cmake -printf '%h\n' | head -1)" >"$out/configure.txt" 2>&1 || { tail -20 "$out/configure.txt"; exit 1; }
cmake --build build-gpu -j"$(nproc)" --target bench_attention test_backend_ops test_gpu_model >"$out/build.txt" 2>&1 || { grep -E "error" "$out/build.txt" | head; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"; date -u +%FT%TZ
(timeout "${MODEL_TIMEOUT:-100}" build-gpu/test_gpu_model >"$out/gpu_model.txt" 2>&1; echo "exit $?" >>"$out/gpu_model.txt") &
model=$!
bash scripts/gpu_parity_parallel.sh "${PARITY_TIMEOUT:-100}" attention_decode attention_decode_fp8 sparse_attention
wait "$model"
echo "== test_gpu_model: $(grep -E "passed, [0-9]+ failed" "$out/gpu_model.txt" | tail -1); $(tail -1 "$out/gpu_model.txt")"
grep -E "FAIL" "$out/gpu_model.txt" | head -5
echo "parity+model done at $(( $(date +%s) - t0 )) s"
timeout "${BENCH_TIMEOUT:-60}" build-gpu/bench_kernels/bench_attention --cases "$CASES" >"$out/bench_cases.txt" 2>&1
echo "== bench exit $?"
grep -vE "^\s*$" "$out/bench_cases.txt" | sed 's/  */ /g' | cut -c1-120
echo "bench done at $(( $(date +%s) - t0 )) s"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for spec in ${NCU_CASES:-}; do
  log="$out/ncu_${spec//,/_}.txt"
  timeout "${NCU_TIMEOUT:-40}" "$NCU" --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,dram__bytes_read.sum" \
    -k "regex:attention_decode_(ws|combine)" --launch-skip 2 --launch-count 2 \
    build-gpu/bench_kernels/bench_attention --runs 50 --no-ceilings --cases "$spec" >"$log" 2>&1
  echo "== ncu $spec exit $?"
  grep -E "attention_decode_(ws|combine)|Duration|DRAM Throughput|Compute \(SM\)|Executed Ipc A|Issue Slots Busy|Warp Cycles Per Issued|issue_stalled_(barrier|long_sc|short_sc|wait|gmma|mio|lg_th|selected|not_sel|no_inst|math|dispatch|sleeping)|inst_executed|dram__bytes" "$log" | sed 's/  */ /g; s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | cut -c1-110
done
echo "all done at $(( $(date +%s) - t0 )) s"
