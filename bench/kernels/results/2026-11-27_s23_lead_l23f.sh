#!/usr/bin/env bash
# Session 23 lead, call l23f (H200): LIN11's W8A8 wgmma core (plan.wgmma, branch wip/lin11-wgmma) A/B in one
# binary (--w8a8-ab: base / default / pf2 / wg / wg+pf2 / wg+pf4); parity fp8act families, test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l23f/l23f.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l23f; rm -rf $L; mkdir -p $L/parity
P=$L/parity
timeout 150 $G/test_backend_ops --filter linear_decode_fp8act,linear_decode_fp8act_plans > $P/fp8act.txt 2>&1; echo "exit $?" >> $P/fp8act.txt
echo "parity t=$(el): $(grep -c ' OK' $P/fp8act.txt) OK, $(grep -c FAIL $P/fp8act.txt) FAIL"; grep FAIL $P/fp8act.txt | head -6 | cut -c1-220
grep "wgmma" $P/fp8act.txt | head -3 | cut -c1-200
for r in 1 2; do
  timeout 90 $G/bench_linear_gemm --w8a8-ab > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/w8a8.txt
  echo "w8a8 r$r t=$(el)"; grep -E "^ab (fl.wq_b|fl.wo_b|pro.wq_b|pro.wo_b) .*T=(1|8) " $L/cur.txt | sed -E 's/ \| /|/g' | awk -F'|' '{printf "%s", substr($1,4,30); for(i=2;i<=NF;i++){split($i,a," "); printf " %s=%s", a[1], a[2]} print ""}'
done
timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
echo "== gpu_model: $(grep -E 'passed|failed' $P/gpu_model.txt | tail -1)"
rm -f $L/cur.txt
tar czf $OUT/l23f_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
