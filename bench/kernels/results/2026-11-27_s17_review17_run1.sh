#!/usr/bin/env bash
# REVIEW17 call 1 (session 17): parity of the W4A8 prefill families (expand_e2m1x8 now the
# one-mask form in the w4a8 / w4a8_serial kernels too) and a same-call A/B of main's
# bench_moe_linear vs the branch's (--prefill-w4a8, Flash T = 4096), alternating main / branch.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
W=$PWD/.wt/review17; B=/tmp/b17
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
TB=$B/test_backend_ops
par(){ # name timeout args...
  local n=$1 t=$2; shift 2
  timeout $t "$@" > $OUT/parity_$n.txt 2>&1; echo "parity $n rc=$? t=$(el) OK=$(grep -cE ' OK$' $OUT/parity_$n.txt)"
  grep -E "FAIL|passed" $OUT/parity_$n.txt | tail -3 | cut -c1-200
}
par w4a8 30 $TB --filter moe_prefill_official_w4a8 --per-op 14
par w4a8_serial 30 $TB --filter moe_prefill_official_w4a8_serial --per-op 14
par w4a8_ws 20 $TB --filter moe_prefill_official_w4a8_ws --per-op 14
summ(){ grep -E "official w4a8|differ" $1 | sed -E 's/ +/ /g; s/ BF16 values differ//' | cut -c1-150; }
for pass in 1 2; do
  for v in main branch; do
    [ $(el) -gt 120 ] && { echo "skip $v pass $pass (t=$(el))"; continue; }
    BM=$B/bench_kernels/bench_moe_linear; [ $v = main ] && BM=$B/main/bench_moe_linear
    echo "=== $v pass $pass t=$(el)"
    timeout $(( 140 - $(el) )) $BM --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $OUT/bench_${v}_p$pass.txt 2>&1
    echo "rc=$? t=$(el)"; summ $OUT/bench_${v}_p$pass.txt
  done
done
