#!/usr/bin/env bash
# PREFILL14 call 1 (session 17): w4a8_ws two-block consumer loop (DSV4_W4A8_WS_DB=1, default) vs
# the single-block loop (DB=0, SASS-identical to main's kernel) - parity of both, then main's
# bench_moe_linear and ours (in-process A/B, two passes, alternating order) alternately.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/prefill14; B=/tmp/b14
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
summ(){ grep -E "w4a8_ws|AB|dense|W4A16|differ" $1 | sed -E 's/ +/ /g' | cut -c1-170; }
ben(){ # name budget binary [env]
  local n=$1 t=$2 b=$3; shift 3
  local left=$(( 178 - $(el) )); [ $left -lt $t ] && t=$left
  [ $t -lt 20 ] && { echo "skip $n (t=$(el))"; return; }
  echo "=== $n t=$(el) limit=$t"
  env "$@" timeout $t $b $ARGS > $OUT/bench_$n.txt 2>&1; echo "rc=$? t=$(el)"; summ $OUT/bench_$n.txt
}
par db1 30 $TB --filter moe_prefill_official_w4a8_ws --per-op 19
DSV4_W4A8_WS_DB=0 par db0 30 $TB --filter moe_prefill_official_w4a8_ws --per-op 19
ben main1 45 $BMM X=1
ben mine_ab 55 $BM DSV4_W4A8_WS_AB=1
ben main2 45 $BMM X=1
ben mine2 45 $BM X=1
echo "end t=$(el)"
