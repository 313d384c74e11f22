#!/usr/bin/env bash
# PREFILL18 call 2 (session 18): (a) parity of the TRY variant (DSV4_W4A8_WS_DIAG=16: promote round r
# before waiting when round r + 1's stage is not full), (b) in one process, DSV4_W4A8_WS_DIAG values
# timed alternately, two passes (pass 2 reversed): 0 main's kernel (SASS-identical), 16 TRY,
# diagnostics (wrong y): 8 no GEMM launch, 1 consumers reduced to the ring protocol, 3 = 1 + B rows /
# token scales zero-filled (same copy instructions, no global read), 5 = 1 + weights / weight scales
# zero-filled, 7 = 1 + both, 2 / 4 full consumers with B / weights zero-filled. The bench runs with
# DIAG=16 set, so its "w4a8_ws vs w4a8" line checks TRY's y bit for bit.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/prefill18; B=/tmp/b18b
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins2.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
DSV4_W4A8_WS_DIAG=16 timeout 30 $B/test_backend_ops --filter moe_prefill_official_w4a8_ws --per-op 16 > $OUT/parity_try.txt 2>&1
echo "parity try rc=$? t=$(el) OK=$(grep -cE ' OK$' $OUT/parity_try.txt)"; grep -E "FAIL|passed" $OUT/parity_try.txt | tail -4 | cut -c1-200
L=$(( 146 - $(el) ))
DSV4_W4A8_WS_DIAG=16 DSV4_W4A8_AB_VAR=DSV4_W4A8_WS_DIAG DSV4_W4A8_AB_LIST=0,16,8,1,3,5,7,2,4 timeout $L $B/bench_moe_linear \
  --prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096 > $OUT/bench_diag.txt 2>&1
echo "bench rc=$? t=$(el)"
grep -E "w4a8_ws|AB|fp8 dense|differ" $OUT/bench_diag.txt | sed -E 's/ +/ /g; s/DSV4_W4A8_WS_DIAG/D/' | cut -c1-120
