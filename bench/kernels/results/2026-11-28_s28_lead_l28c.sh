#!/usr/bin/env bash
# Session 28 lead, call l28c: linear_decode_grouped FP8 blocks (official wo_a): every split, bf16 x, T = 1..8.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28c/l28c.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
for r in 1 2; do
timeout 200 $G/bench_linear_gemm --fp8-grouped-sweep > $OUT/sweep_r$r.txt 2>&1; echo "exit $? t=$(el)"
grep -E "fp8-grouped|ceiling" $OUT/sweep_r$r.txt | cut -c1-400
done
