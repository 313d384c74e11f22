#!/usr/bin/env bash
# Session 19 PREFILL19, call 1: q4 MXFP4 with k_carry (q4_consume_item_mx, 112 / 32 split).
# Parity of the ws families on the GPU, then A/B against main's bench_moe_linear (4a2dd45):
# processes alternate base / new / base / new, each runs epi 4 (two-warpgroup kernel) and epi 16 (q4)
# in three alternating passes, MXFP4, Flash and Pro T = 4096, cuBLAS BF16 dense ceiling in-process.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-prefill19; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/prefill19/prefill19_r1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 95 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run b_rp --filter moe_prefill_wgmma_ws_repacked --per-op 16 &
run c_orp --filter moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run d_pr --filter moe_prefill_wgmma_ws_pr_repacked,moe_prefill_official_wgmma_ws_pr_repacked --per-op 16 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3 | cut -c1-200; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "parity done t=$(el)"
for r in 1 2; do for n in base new; do
  bin=$G/bench_moe_linear; [ $n = base ] && bin=$G/bench_moe_linear_base
  [ $(el) -lt 165 ] || { echo "skip $n r$r (time)"; continue; }
  timeout 40 $bin --prefill-ws --ws-t 4096 --formats mxfp4 --ws-epis 4,16 > $OUT/cur.txt 2>&1; rc=$?
  cat $OUT/cur.txt >> $OUT/bench_$n.txt
  echo "bench $n r$r rc=$rc t=$(el)"
  grep -hE "speed-up over" $OUT/cur.txt | sed -E 's/ +/ /g' | cut -c1-120
  echo "bit checks not clean: $(grep -hE 'differ' $OUT/cur.txt | grep -vcE ' 0 of [0-9]+ differ, 0 unwritten')"
  grep -hE "dense|epi(4|16) rp p[123]" $OUT/cur.txt | sed -E 's/ +/ /g' | cut -c1-100
done; done; rm -f $OUT/cur.txt
echo "done t=$(el)"; ls $OUT
