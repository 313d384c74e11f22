#!/usr/bin/env bash
# Session 23 lead, call l23d (H200): main 842442e (LIN10's linear_decode ring merged) + eef9708 (W8A8 ring
# with the register pipeline's core, A/B): parity (linear_decode families, fp8act plans, test_gpu_model),
# W8A8 ring A/B (--w8a8-ab x2), linear_decode defaults vs main 79f2e8d (--decode-only, alternating).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l23d/l23d.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l23d; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 150 --filter linear_decode,linear_decode_grouped,linear_decode_ring &
p fp8act 150 --filter linear_decode_fp8act,linear_decode_fp8act_plans &
wait
echo "parity t=$(el)"
timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
for r in 1 2; do
  timeout 90 $G/bench_linear_gemm --w8a8-ab > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/w8a8_new.txt
  echo "w8a8 r$r t=$(el)"
done
for n in base new; do
  if [ $n = base ]; then b=$G/bench_linear_gemm_base; else b=$G/bench_linear_gemm; fi
  timeout 120 $b --decode-only > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/decode_$n.txt
  echo "decode-only $n t=$(el)"
done
rm -f $L/cur.txt
tar czf $OUT/l23d_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
