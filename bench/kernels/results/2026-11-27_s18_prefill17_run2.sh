#!/usr/bin/env bash
# PREFILL17 run 2: q4 kernel with warpgroups 2-3 staggered by lag rounds (epi modes 17-19) vs q4
# (16) vs main's default (4), same process; q4 with session 13's producer (48) vs main's kernel
# (16 = epi 4 there) at NVFP4 T = 1024 / 2048 (below 64 pairs per expert); parity with the
# default 50 (q4 with either producer, lag 2).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=/tmp/b; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill17/bins2.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 45 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run rp --filter moe_prefill_wgmma_ws_repacked --per-op 16 &
run orp --filter moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run pr --filter moe_prefill_wgmma_ws_pr_repacked,moe_prefill_official_wgmma_ws_pr_repacked --per-op 16 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK$' $f) OK, $(grep -c FAIL $f) FAIL"; grep FAIL $f | head -3 | cut -c1-220; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "parity t=$(el)"
timeout 75 $G/bench_moe_linear --prefill-ws --ws-t 4096 --formats mxfp4,nvfp4 --ws-epis 4,16,17,18,19 > $OUT/bench_lags.txt 2>&1; echo "lags rc=$? t=$(el)"
[ $(el) -lt 128 ] && { timeout $((148-$(el))) $G/bench_moe_linear --prefill-ws --ws-t 1024,2048 --shapes flash --formats nvfp4 --ws-epis 16,48 > $OUT/bench_nopr.txt 2>&1; echo "nopr rc=$? t=$(el)"; }
cat $OUT/bench_*.txt | grep -E "differ" | grep -vE " 0 of [0-9]+ differ, 0 unwritten" | sed -E 's/ +/ /g' | cut -c1-150
echo "bit checks: $(cat $OUT/bench_*.txt | grep -c ' 0 of [0-9]* differ, 0 unwritten') clean of $(cat $OUT/bench_*.txt | grep -c differ)"
cat $OUT/bench_*.txt | grep -hE "speed" | sed -E 's/ +/ /g;s/repacked //' | cut -c1-120
cat $OUT/bench_*.txt | grep -hE "dense|rp p1" | sed -E 's/ +/ /g;s/wgmma_ws //' | cut -c1-90
echo "done t=$(el)"; ls $OUT
