#!/usr/bin/env bash
# Session 24 lead, call l24f (H100): main 019cbaa (W8A8 x lead + late scales; LIN12's linear_decode activation lead with
# its H200-derived default rule) on the H100: parity of the linear families + test_gpu_model, then --lead-ab (bf16,
# nvfp4: main's split with x_lead 0 vs the default) and --w8a8-xlead 1.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24f/l24f.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24f; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 140 --filter linear_decode,linear_decode_grouped,linear_decode_ring,linear_decode_lead &
p fp8act 140 --filter linear_decode_fp8act,linear_decode_fp8act_plans &
( timeout 120 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity t=$(el)"
for f in bf16 nvfp4; do
  timeout 60 $G/bench_linear_gemm --lead-ab $f > $L/lead_ab_$f.txt 2>&1; echo "exit $?" >> $L/lead_ab_$f.txt
  echo "lead-ab $f t=$(el)"; grep '^lead ' $L/lead_ab_$f.txt | awk -F'|' '{printf "%s|%s|%s\n", substr($1,1,60), $2, $3}' | cut -c1-150
done
timeout 120 $G/bench_linear_gemm --w8a8-xlead 1 > $L/xlead.txt 2>&1; echo "exit $?" >> $L/xlead.txt
echo "xlead t=$(el)"; grep -E "^xlead (fl.wq_b|fl.wo_b|pro.wq_b|pro.wo_b)" $L/xlead.txt | cut -c1-200
tar czf $OUT/l24f_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
