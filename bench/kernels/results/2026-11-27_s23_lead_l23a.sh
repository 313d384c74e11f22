#!/usr/bin/env bash
# Session 23 lead, call l23a (H200): LIN9's ring core for the W8A8 decode linear (linear_decode_fp8act
# plan.ring_stages 4 / 6; code on branch wip/lin9-ring) vs main 79f2e8d's bench_linear_gemm in the same call;
# parity of the ring tree.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l23a/l23a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l23a; rm -rf $L; mkdir -p $L/parity
P=$L/parity
timeout 120 $G/test_backend_ops --filter linear_decode_fp8act,linear_decode_fp8act_plans > $P/fp8act.txt 2>&1; echo "exit $?" >> $P/fp8act.txt
echo "parity t=$(el): $(grep -c ' OK' $P/fp8act.txt) OK, $(grep -c FAIL $P/fp8act.txt) FAIL"; grep FAIL $P/fp8act.txt | head -5 | cut -c1-220
for n in base new base new; do
  if [ $n = base ]; then b=$G/bench_linear_gemm_base; else b=$G/bench_linear_gemm; fi
  timeout 90 $b --w8a8-ab > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/ab_$n.txt
  echo "ab $n t=$(el): $(grep -c '^ab ' $L/cur.txt) rows; $(grep 'read ceiling' $L/cur.txt | tr '\n' ' ')"
done
timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; done
rm -f $L/cur.txt
tar czf $OUT/l23a_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
