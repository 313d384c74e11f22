#!/usr/bin/env bash
# PREFILL18 call 2 (session 18): the w4a8_ws producer's floor, by diagnostics in one process
# (DSV4_W4A8_WS_DIAG, wrong y): 0 main's kernel (SASS-identical), 8 no GEMM launch, 1 consumers
# reduced to the ring protocol, 3 = 1 + B rows / token scales zero-filled (same copy instructions,
# no global read), 5 = 1 + weights / weight scales zero-filled, 7 = 1 + both, 2 / 4 full consumers
# with B / weights zero-filled. Two passes (pass 2 reversed).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/prefill18; B=/tmp/b18b
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins2.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s)
DSV4_W4A8_AB_VAR=DSV4_W4A8_WS_DIAG DSV4_W4A8_AB_LIST=0,8,1,3,5,7,2,4 timeout 140 $B/bench_moe_linear \
  --prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096 > $OUT/bench_diag.txt 2>&1
echo "rc=$? t=$(( $(date +%s)-T0 ))"
grep -E "w4a8_ws|AB|fp8 dense|differ" $OUT/bench_diag.txt | sed -E 's/ +/ /g' | cut -c1-160
