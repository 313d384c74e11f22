#!/usr/bin/env bash
# PREFILL20 (session 20) device call 2 (binaries of the commit in commit.txt: call 1's changes + the
# plan's indices staged in shared memory + the W4A16 ws core's L1 h as BF16 rounded to odd).
# 1. --w4a8-ab Flash T=4096: W4A8 ws, the engine's W4A16 path and the W4A8 pipelined core under
#    DSV4_PREFILL_NONGEMM_OLD = 31 (main's non-GEMM kernels) / 0 (new) / 16 (new, the plan as
#    main's) / 2 (new, h in f32), 3 passes; y byte checks; stage breakdowns under 0.
# 2. main b6cea3f's bench_moe_linear (_base) vs this branch's, --prefill-w4a8 Flash T=4096 and Pro
#    T=4096, alternated base new new base.
# 3. parity, one process per family (the families call 1 cut by its time limit included).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/prefill20/prefill20_r2.tar.xz
G=build-gpu-prefill20; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/prefill20_logs2; rm -rf $L; mkdir -p $L/parity
echo "== ab flash t+$(el)"
timeout 50 $G/bench_moe_linear --w4a8-ab --ab-old 31,0,16,2 --ab-passes 3 --ab-breakdown-new --w4a8-flash-t 4096 --w4a8-pro-t "" --replays 10 > $L/ab_flash.txt 2>&1; echo "rc $?" >> $L/ab_flash.txt
grep -E "ceilings|differ|speed|breakdown|stage|rc " $L/ab_flash.txt
echo "== main vs new, --prefill-w4a8 Flash T=4096 + Pro T=4096 t+$(el)"
for tag in base new new base; do
  [ $(el) -lt 110 ] || break
  bin=$G/bench_moe_linear; [ $tag = base ] && bin=$G/bench_moe_linear_base
  echo "== $tag t+$(el)" >> $L/w4a8_$tag.txt
  timeout 30 $bin --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t 4096 > $L/cur.txt 2>&1; rc=$?
  cat $L/cur.txt >> $L/w4a8_$tag.txt
  echo "$tag rc$rc t+$(el)"; grep -E "^(flash|pro) " $L/cur.txt | grep -v "T=" | grep -E "ceil|W4A16|w4a8_ws"
done
rm -f $L/cur.txt
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 120 ] && lim=120; [ $lim -lt 25 ] && lim=25
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p w4a8_ws --filter moe_prefill_official_w4a8_ws,moe_prefill_w4a8_ws &
p w4a8 --filter moe_prefill_official_w4a8,moe_prefill_w4a8 &
p w4a8_serial --filter moe_prefill_official_w4a8_serial,moe_prefill_w4a8_serial &
p off_ws --filter moe_prefill_official_wgmma_ws &
p ws --filter moe_prefill_wgmma_ws &
p off_ws_rp --filter moe_prefill_official_wgmma_ws_repacked &
p ws_rp --filter moe_prefill_wgmma_ws_repacked &
p wide --filter moe_prefill_official_wgmma_ws_wide_repacked,moe_prefill_wgmma_ws_wide_repacked &
p pr --filter moe_prefill_official_wgmma_ws_pr_repacked,moe_prefill_wgmma_ws_pr_repacked &
p mma --filter moe_prefill &
p mma_off --filter moe_prefill_official &
p off_wgmma --filter moe_prefill_official_wgmma &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-250; done
tar czf $OUT/prefill20_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
