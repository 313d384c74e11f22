#!/usr/bin/env bash
# MOE5 GPU run 2: build this branch and the base commit (6132761) side by side, bench A/B, parity.
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
cmake -S ../moe5base/tests/cuda -B build-base "${args[@]}" > $O/cfg_base.txt 2>&1
( ninja -C build-base -j6 bench_moe_linear > $O/build_base.txt 2>&1; echo "base build rc $?" ) &
ninja -C build-gpu -j12 bench_moe_linear test_backend_ops > $O/build.txt 2>&1 || { grep -E "error" $O/build.txt | head -20; exit 1; }
wait
echo "build $(( $(date +%s) - t0 )) s"
B=build-gpu/bench_kernels/bench_moe_linear
t1=$(date +%s)
timeout 14 build-base/bench_kernels/bench_moe_linear --decode-only --replays 15 --shapes flash --formats mxfp4 --tokens 1,64 > $O/bench_base.txt 2>&1; echo "base bench rc $? $(( $(date +%s) - t1 )) s"
grep -E "^flash|^read|ceiling" $O/bench_base.txt | head -30
t1=$(date +%s)
timeout 62 $B --decode-only --replays 15 > $O/bench.txt 2>&1; echo "bench rc $? $(( $(date +%s) - t1 )) s"
grep -E "check|%|breakdown|stage|ceiling" $O/bench.txt | grep -vE "^hbm|copy" | head -150
t1=$(date +%s)
P=build-gpu/test_backend_ops
for f in moe_repack,moe_decode_official_repacked moe_decode_repacked moe_decode_official moe_decode; do
  timeout 85 $P --filter $f > $O/parity_${f//,/_}.txt 2>&1 &
done
wait
echo "parity $(( $(date +%s) - t1 )) s"
for f in $O/parity_*.txt; do echo "$f: OK $(grep -cE ' OK' $f) FAIL $(grep -cE 'FAIL' $f)"; grep -E "FAIL" $f | head -5; done
