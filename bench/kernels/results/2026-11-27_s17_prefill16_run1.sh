#!/usr/bin/env bash
# PREFILL16 run 1: wide ws kernel with two k16 steps per commit group (modes 2 = up to N 128, 3 = all N)
# vs main's kernels (wide0 = 128-pair kernel, wide1 = main's wide kernel), same process; parity.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=/tmp/b; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill16/bins.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
timeout 80 $G/bench_moe_linear --prefill-ws --ws-wides 0,1,2,3 --ws-t 4096,8192 --formats mxfp4,nvfp4 > $OUT/ws_wides.txt 2>&1; echo "ws_wides rc=$? t=$(el)"
grep -hE "speed|differ" $OUT/ws_wides.txt | grep -vE " 0 of [0-9]+ differ, 0 unwritten" | sed -E 's/ +/ /g' | cut -c1-150
grep -hE "speed" $OUT/ws_wides.txt | sed -E 's/ +/ /g;s/repacked //;s/speed-up over wide0//' | cut -c1-120
grep -hE "dense|wide[0-3] rp p1" $OUT/ws_wides.txt | sed -E 's/ +/ /g' | cut -c1-100
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 55 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run w2 --filter moe_prefill_wgmma_ws_wide2_repacked,moe_prefill_official_wgmma_ws_wide2_repacked --per-op 16 &
run w3 --filter moe_prefill_wgmma_ws_wide3_repacked,moe_prefill_official_wgmma_ws_wide3_repacked --per-op 16 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
[ $(el) -lt 125 ] && { timeout $((148-$(el))) $G/bench_moe_linear --prefill-ws --ws-wides 0,1,3 --ws-t 6144 --shapes flash --formats mxfp4,nvfp4 > $OUT/ws_t6144.txt 2>&1; echo "t6144 rc=$? t=$(el)"; grep -hE "speed|dense|wide[0-3] rp p1" $OUT/ws_t6144.txt | sed -E 's/ +/ /g;s/repacked //' | cut -c1-120; }
echo "done t=$(el)"; ls $OUT
