#!/usr/bin/env bash
# Session 25 lead, call l25b: the mHC collapse's split path (decode sizes) against main f96e1cc.
# 1. parity: the mHC families (beside) test_gpu_model (all cases)
# 2. test_backend_ops --perf on hc_pre / hc_head (block / cluster / split, event-timed single calls)
# 3. the model's decode step: test_gpu_model --only-repacked, base (f96e1cc) and new alternating, 2 rounds
# 4. ncu device time per kernel of one decode step (batch 3) of the new tree
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25b/l25b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l25b; rm -rf $L; mkdir -p $L/e2e
( timeout 100 $G/test_backend_ops --filter hc_pre,hc_head,hc_pre_kernels_agree,hc_head_kernels_agree,hc_pre_split_refusals,hc_post > $L/parity_mhc.txt 2>&1; echo "exit $?" >> $L/parity_mhc.txt ) &
( timeout 170 $G/test_gpu_model > $L/parity_gpu_model.txt 2>&1; echo "exit $?" >> $L/parity_gpu_model.txt ) &
wait
for f in $L/parity_*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -6 | cut -c1-220; done
echo "parity t=$(el)"
timeout 90 $G/test_backend_ops --perf --filter hc_pre,hc_head > $L/perf_mhc.txt 2>&1; echo "exit $?" >> $L/perf_mhc.txt
grep -E "hc_(pre|head)" $L/perf_mhc.txt | cut -c1-150 | head -50; echo "perf t=$(el)"
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';' | cut -c1-400) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
timeout 100 $NCU --profile-from-start off --csv --cache-control none --clock-control none --metrics gpu__time_duration.sum \
  $G/test_gpu_model --profile-step 6 > $L/step6.csv 2> $L/step6_err.txt; echo "ncu exit $? t=$(el)"
python3 scripts/ncu_step_breakdown.py $L/step6.csv > $L/step6_breakdown.txt 2>&1; head -16 $L/step6_breakdown.txt
tar czf $OUT/l25b_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
