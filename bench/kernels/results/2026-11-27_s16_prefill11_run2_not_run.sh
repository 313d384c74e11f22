#!/usr/bin/env bash
# PREFILL11 call 2 (session 16): valid diagnostics (sinks), A/B of noinc / lean / ts_early / ufold,
# parity of the candidates. Variant 0 at lead 6 = main's default kernel (SASS-identical).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
R=$PWD; W=$R/.wt/prefill11; B=/tmp/b11
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
BM=$B/bench_kernels/bench_moe_linear
summ(){ grep -E "w4a8_ws|dense|W4A16|differ" $1 | sed -E 's/ +/ /g; s/ BF16 values differ//; s/y differs from w4a8/ydiff/; s/ w4a8_ws / /' | cut -c1-130; }
echo "=== 1. parity t=$(el)"
for lv in 0:0 0:64 0:1536 0:1600 6:64 6:1600; do
  DSV4_W4A8_WS_LEAD=${lv%%:*} DSV4_W4A8_WS_VARIANT=${lv##*:} timeout 12 $B/test_backend_ops --filter moe_prefill_official_w4a8_ws --per-op 14 > /tmp/par_$lv.txt 2>&1
  echo "$lv rc=$? $(grep -E 'passed' /tmp/par_$lv.txt) FAIL=$(grep -c FAIL /tmp/par_$lv.txt)"; cat /tmp/par_$lv.txt >> $OUT/parity.txt
done
echo "=== 2. bench Flash T=4096 (3 passes) t=$(el)"
DSV4_W4A8_WS_AB=6:0,0:0,0:64,0:1536,0:1600,6:64,6:1600,6:1,6:2,6:4,6:8,6:12,6:15 \
  DSV4_W4A8_WS_AB_PASSES=3 timeout 60 $BM --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $OUT/bench_flash4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_flash4096.txt
echo "=== 3. bench Flash T=8192 + Pro T=4096 (2 passes) t=$(el)"
DSV4_W4A8_WS_AB=6:0,0:0,0:64,0:1600,6:1600 DSV4_W4A8_WS_AB_PASSES=2 \
  timeout $(( 140 - $(el) )) $BM --prefill-w4a8 --w4a8-flash-t 8192 --w4a8-pro-t 4096 > $OUT/bench_f8192_p4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_f8192_p4096.txt
