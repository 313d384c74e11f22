#!/usr/bin/env bash
# PREFILL20 (session 20) device call 1: the non-GEMM kernels of the official MXFP4 prefill.
# 1. --fp8-check: the new FP8 rounding (v * (1 / s), cvt.rn.satfinite.e4m3x2) and BF16
#    round-to-odd h against quant::e4m3_round over all 2^32 f32 inputs.
# 2. --w4a8-ab (one process per shape): W4A8 ws and the engine's W4A16 path (repacked) under
#    DSV4_PREFILL_NONGEMM_OLD = 15 (main's non-GEMM kernels) / 0 (new) / one change at a time, two
#    passes; y byte checks against 15; stage breakdowns under 15 and 0. Flash T=4096, Pro T=4096.
# 3. main b6cea3f's bench_moe_linear (_base) vs this branch's, --prefill-w4a8 Flash T=4096,
#    alternated base new new base.
# 4. parity (parallel groups): w4a8 / w4a8_serial / w4a8_ws (+ y bytes vs main's non-GEMM path),
#    wgmma_ws (+ y bytes vs the wgmma core with main's non-GEMM path), ws repacked / wide / pr,
#    mma_sync (combine).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/prefill20/prefill20_r1.tar.xz
G=build-gpu-prefill20; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/prefill20_logs; rm -rf $L; mkdir -p $L/parity
echo "== fp8-check t+$(el)"
timeout 40 $G/bench_moe_linear --fp8-check > $L/fp8_check.txt 2>&1; echo "rc $?" >> $L/fp8_check.txt
cat $L/fp8_check.txt
echo "== ab flash t+$(el)"
timeout 45 $G/bench_moe_linear --w4a8-ab --w4a8-flash-t 4096 --w4a8-pro-t "" --replays 10 > $L/ab_flash.txt 2>&1; echo "rc $?" >> $L/ab_flash.txt
grep -E "ceilings|differ|speed|breakdown|stage|rc " $L/ab_flash.txt
echo "== ab pro t+$(el)"
timeout 60 $G/bench_moe_linear --w4a8-ab --w4a8-flash-t "" --w4a8-pro-t 4096 --replays 10 > $L/ab_pro.txt 2>&1; echo "rc $?" >> $L/ab_pro.txt
grep -E "ceilings|differ|speed|breakdown|stage|rc " $L/ab_pro.txt
echo "== main vs new, --prefill-w4a8 Flash T=4096 t+$(el)"
for tag in base new new base; do
  [ $(el) -lt 140 ] || break
  bin=$G/bench_moe_linear; [ $tag = base ] && bin=$G/bench_moe_linear_base
  echo "== $tag t+$(el)" >> $L/w4a8_$tag.txt
  timeout 25 $bin --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $L/cur.txt 2>&1; rc=$?
  cat $L/cur.txt >> $L/w4a8_$tag.txt
  echo "$tag rc$rc t+$(el)"; grep -E "^flash " $L/cur.txt | grep -v "T=" 
done
rm -f $L/cur.txt
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 110 ] && lim=110; [ $lim -lt 25 ] && lim=25
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p w4a8_ws --filter moe_prefill_official_w4a8_ws,moe_prefill_w4a8_ws &
p w4a8 --filter moe_prefill_official_w4a8,moe_prefill_w4a8 &
p w4a8_serial --filter moe_prefill_official_w4a8_serial,moe_prefill_w4a8_serial &
p off_ws --filter moe_prefill_official_wgmma_ws &
p ws --filter moe_prefill_wgmma_ws &
p ws_rp --filter moe_prefill_official_wgmma_ws_repacked,moe_prefill_wgmma_ws_repacked &
p ws_wide_pr --filter moe_prefill_official_wgmma_ws_wide_repacked,moe_prefill_wgmma_ws_wide_repacked,moe_prefill_official_wgmma_ws_pr_repacked,moe_prefill_wgmma_ws_pr_repacked &
p mma --filter moe_prefill,moe_prefill_official &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-250; done
tar czf $OUT/prefill20_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
