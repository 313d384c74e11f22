#!/usr/bin/env bash
# PREFILL12 call 1 (session 16): w4a8_ws converter variants (DSV4_W4A8_WS_CONV=1: one converter
# warpgroup; 3: two; 2: diagnostic of 1 without the expansion) - parity, then main's default vs
# the variants in the same process (bench_moe_linear --prefill-w4a8, Flash T=4096/8192, Pro 4096).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/prefill12; B=/tmp/b12
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
BM=$B/bench_kernels/bench_moe_linear; TB=$B/test_backend_ops
par(){ # name timeout args...
  local n=$1 t=$2; shift 2
  timeout $t "$@" > $OUT/parity_$n.txt 2>&1; echo "parity $n rc=$? t=$(el) OK=$(grep -cE ' OK$' $OUT/parity_$n.txt)"
  grep -E "FAIL|passed" $OUT/parity_$n.txt | tail -3 | cut -c1-200
}
par conv1 30 $TB --filter moe_prefill_official_w4a8_ws_conv --per-op 12
DSV4_TEST_W4A8_CONV=3 par conv3 30 $TB --filter moe_prefill_official_w4a8_ws_conv --per-op 12
par ws 30 $TB --filter moe_prefill_official_w4a8_ws --per-op 14
summ(){ grep -E "w4a8_ws|conv|diag|dense|W4A16|differ|over" $1 | sed -E 's/ +/ /g; s/ BF16 values differ//' | cut -c1-150; }
echo "=== bench Flash T=4096 t=$(el)"
timeout 50 $BM --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $OUT/bench_flash4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_flash4096.txt
echo "=== bench Flash T=8192 + Pro T=4096 t=$(el)"
timeout $(( 145 - $(el) )) $BM --prefill-w4a8 --w4a8-flash-t 8192 --w4a8-pro-t 4096 > $OUT/bench_f8192_p4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_f8192_p4096.txt
