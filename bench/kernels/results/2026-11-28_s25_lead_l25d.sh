#!/usr/bin/env bash
# Session 25 lead, call l25d: the mHC split path with the sums kernel's tokens over grid.y (8 a CTA) and per-op
# automatic thresholds; rms_norm's early weight loads against main f96e1cc (ncu device times, caches flushed per launch).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25d/l25d.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l25d; rm -rf $L; mkdir -p $L/e2e
( timeout 100 $G/test_backend_ops --filter rms_norm,hc_pre,hc_head,hc_pre_kernels_agree,hc_head_kernels_agree,hc_pre_split_refusals,hc_post > $L/parity_ops.txt 2>&1; echo "exit $?" >> $L/parity_ops.txt ) &
( timeout 170 $G/test_gpu_model > $L/parity_gpu_model.txt 2>&1; echo "exit $?" >> $L/parity_gpu_model.txt ) &
wait
for f in $L/parity_*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -6 | cut -c1-220; done
echo "parity t=$(el)"
timeout 60 $G/test_backend_ops --perf --filter hc_pre,hc_head > $L/perf_hc.txt 2>&1; echo "exit $?" >> $L/perf_hc.txt
grep -E "hc_(pre|head).*T=(1|4|16|24|32|48|64) .*(cluster|split)" $L/perf_hc.txt | cut -c1-150; echo "perf t=$(el)"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for b in base new; do
  bin=$G/test_backend_ops; [ $b = base ] && bin=$G/test_backend_ops_base
  timeout 60 $NCU --csv --metrics gpu__time_duration.sum -k regex:rms_norm $bin --perf --filter rms_norm --perf-runs 10 > $L/ncu_rms_$b.csv 2>/dev/null
  echo "rms_norm ncu $b t=$(el):"; python3 scripts/ncu_launch_medians.py $L/ncu_rms_$b.csv --per-case 15 2>&1 | head -8
done
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'gpu-repacked-experts.*decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): checkpoint [0-9.]* ms, repacked /b\1 /' | tr '\n' ';' | cut -c1-300) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
tar czf $OUT/l25d_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
