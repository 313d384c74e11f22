#!/usr/bin/env bash
# Session 19 PREFILL19, call 2 (experiment binary, commit in commit.txt): in-process A/B of the MXFP4 q4
# consumer variants: epi 16 = PREFILL17's q4 (main's, SASS-identical), 17 = PREFILL19's lean round without
# the carry (104 / 64), 18 = with the carry (112 / 32; call 1's kernels, SASS-identical), 4 = two-warpgroup.
# Parity with the default epi 17 (V1; V2 was call 1's default, V0 is main's).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-prefill19; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/prefill19/prefill19_r2.tar.xz $G
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
show() {
  grep -hE "speed-up over" $1 | sed -E 's/ +/ /g' | cut -c1-120
  echo "bit checks not clean: $(grep -hE 'differ' $1 | grep -vcE ' 0 of [0-9]+ differ, 0 unwritten') of $(grep -hcE 'differ' $1)"
  grep -hE "dense|epi(4|16|17|18) rp p[123]" $1 | sed -E 's/ +/ /g' | cut -c1-100
}
for r in 1 2; do
  [ $(el) -lt 130 ] || { echo "skip r$r (time)"; continue; }
  timeout 50 $G/bench_moe_linear --prefill-ws --ws-t 4096 --formats mxfp4 --ws-epis 16,17,18,4 > $OUT/cur.txt 2>&1; rc=$?
  cat $OUT/cur.txt >> $OUT/bench_t4096.txt; echo "bench T=4096 r$r rc=$rc t=$(el)"; show $OUT/cur.txt
done
if [ $(el) -lt 165 ]; then
  timeout 30 $G/bench_moe_linear --prefill-ws --ws-t 8192 --shapes flash --formats mxfp4 --ws-epis 16,17,18 > $OUT/cur.txt 2>&1; rc=$?
  cat $OUT/cur.txt >> $OUT/bench_t8192.txt; echo "bench flash T=8192 rc=$rc t=$(el)"; show $OUT/cur.txt
fi
rm -f $OUT/cur.txt
echo "done t=$(el)"; ls $OUT
