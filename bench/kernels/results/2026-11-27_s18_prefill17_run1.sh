#!/usr/bin/env bash
# PREFILL17 run 1: q4 kernel (four consumer warpgroups, epi mode 16) vs main's default (epi 4):
# parity of the repacked ws families (q4 is the default where the PR producer runs; the _pr
# families force PR for NVFP4), then main's bench binary (bae20d9) and ours alternated.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=/tmp/b; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill17/bins.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 50 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run rp --filter moe_prefill_wgmma_ws_repacked --per-op 16 &
run orp --filter moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run pr --filter moe_prefill_wgmma_ws_pr_repacked,moe_prefill_official_wgmma_ws_pr_repacked --per-op 16 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3 | cut -c1-220; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "parity t=$(el)"
B="--prefill-ws --ws-t 4096 --formats mxfp4,nvfp4"
timeout 35 $G/main_bench_moe_linear $B --ws-epis 4 > $OUT/bench_main1.txt 2>&1; echo "main1 rc=$? t=$(el)"
timeout 45 $G/bench_moe_linear --prefill-ws --ws-t 1024,4096 --formats mxfp4,nvfp4 --ws-epis 4,16 > $OUT/bench_mine.txt 2>&1; echo "mine rc=$? t=$(el)"
[ $(el) -lt 118 ] && { timeout $((148-$(el))) $G/main_bench_moe_linear $B --ws-epis 4 > $OUT/bench_main2.txt 2>&1; echo "main2 rc=$? t=$(el)"; }
grep -hE "differ" $OUT/bench_mine.txt | grep -vE " 0 of [0-9]+ differ, 0 unwritten" | sed -E 's/ +/ /g' | cut -c1-150
echo "bit checks: $(grep -c ' 0 of [0-9]* differ, 0 unwritten' $OUT/bench_mine.txt) clean of $(grep -c differ $OUT/bench_mine.txt)"
grep -hE "speed" $OUT/bench_mine.txt | sed -E 's/ +/ /g;s/repacked //;s/speed-up over epi4//' | cut -c1-120
for f in main1 mine main2; do echo "-- $f"; grep -hE "dense|rp p[123]" $OUT/bench_$f.txt | sed -E 's/ +/ /g;s/wgmma_ws //' | cut -c1-90; done
echo "done t=$(el)"; ls $OUT
