#!/usr/bin/env bash
# Session 28 lead, call l28j (H200): wo_a's BF16 and repacked-NVFP4 forms, every split (bench_linear_gemm --grouped-sweep).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28j/l28j.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
timeout 200 $G/bench_linear_gemm --grouped-sweep > $OUT/grouped_sweep.txt 2>&1; echo "exit $? t=$(el)"
grep -E "^sweep.*nvfp4|ceiling" $OUT/grouped_sweep.txt | cut -c1-330
