#!/usr/bin/env bash
# Session 28 lead, call l28d (H100): FP8 split sweep (grouped wo_a and three ungrouped shapes), parity of the grouped /
# ungrouped linear_decode and mHC families, then the decode step: main 0443cb6 (base) / this tree alternating.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28d/l28d.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28d; rm -rf $L; mkdir -p $L/e2e; save() { tar czf $OUT/l28d_logs.tgz -C $L . 2>/dev/null; }
timeout 150 $G/test_backend_ops --filter linear_decode_grouped,hc_post_pre_norm,hc_post_pre_norm_gates,hc_post_pre_norm_refusals > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
timeout 200 $G/bench_linear_gemm --fp8-grouped-sweep > $L/sweep_r1.txt 2>&1; echo "sweep exit $? t=$(el)"; grep -E "fp8-sweep|ceiling" $L/sweep_r1.txt | cut -c1-330; save
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 120 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(tail -2 $L/e2e/${b}_r$r.txt | tr '\n' ' ')"; grep -E "FAIL|decode step \(batch" $L/e2e/${b}_r$r.txt | grep -E "repacked-experts.*official.*decode|side-branches.*decode|hc-gates.*decode|FAIL" | cut -c1-250; save
done; done
echo "done t=$(el)"
