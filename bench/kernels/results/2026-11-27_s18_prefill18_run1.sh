#!/usr/bin/env bash
# PREFILL18 call 1 (session 18): w4a8_ws with four consumer warpgroups (token halves; DSV4_W4A8_WS_WG4=1,
# =2 with the next round's loads ahead) - parity of both, then main's bench_moe_linear (bae20d9) and ours
# (in-process A/B of WG4=0 / 1 / 2, two passes) alternately.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/prefill18; B=/tmp/b18
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
TB=$B/test_backend_ops; BM=$B/bench_moe_linear; BMM=$B/main/bench_moe_linear
ARGS="--prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096"
par(){ # name timeout args...
  local n=$1 t=$2; shift 2
  timeout $t "$@" > $OUT/parity_$n.txt 2>&1; echo "parity $n rc=$? t=$(el) OK=$(grep -cE ' OK$' $OUT/parity_$n.txt)"
  grep -E "FAIL|passed" $OUT/parity_$n.txt | tail -4 | cut -c1-220
}
summ(){ grep -E "w4a8_ws|AB|fp8 dense|differ" $1 | sed -E 's/ +/ /g' | cut -c1-200; }
ben(){ # name budget binary [env]
  local n=$1 t=$2 b=$3; shift 3
  local left=$(( 146 - $(el) )); [ $left -lt $t ] && t=$left
  [ $t -lt 20 ] && { echo "skip $n (t=$(el))"; return; }
  echo "=== $n t=$(el) limit=$t"
  env "$@" timeout $t $b $ARGS > $OUT/bench_$n.txt 2>&1; echo "rc=$? t=$(el)"; summ $OUT/bench_$n.txt
}
par wg4 40 $TB --filter moe_prefill_official_w4a8_ws4 --per-op 15
DSV4_TEST_W4A8_WG4=2 par wg4pre 25 $TB --filter moe_prefill_official_w4a8_ws4 --per-op 14
ben main1 40 $BMM X=1
ben mine_ab 60 $BM DSV4_W4A8_WS_AB=1
ben main2 40 $BMM X=1
echo "end t=$(el)"
