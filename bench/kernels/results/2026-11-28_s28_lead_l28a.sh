#!/usr/bin/env bash
# Session 28 lead, call l28a: hc_post_pre_norm's gates apart (7fcd3ca): parity of the mHC family, perf rows
# with / without the gates CTA, test_gpu_model --only-repacked (DSV4_HC_GATES_APART 0 / 1 / 0 / 1 bitwise, step
# times), then ncu device time per kernel of one decode step (batch 3) on the new default.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28a/l28a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28a; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l28a_logs.tgz -C $L . 2>/dev/null; }
timeout 120 $G/test_backend_ops --filter hc_post_pre_norm,hc_post_pre_norm_gates,hc_post_pre_norm_refusals,hc_pre,hc_post,hc_head,hc_split_refusals > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
for r in 1 2; do
timeout 60 $G/test_backend_ops --perf --filter "hc_post_pre_norm,hc_post_pre_norm without gates,hc_post_pre_norm chain" > $L/perf_r$r.txt 2>&1; echo "exit $?" >> $L/perf_r$r.txt
echo "== perf r$r t=$(el)"; grep -E "hc_post_pre_norm" $L/perf_r$r.txt | cut -c1-200; save
done
timeout 120 $G/test_gpu_model --only-repacked > $L/e2e.txt 2>&1; echo "exit $?" >> $L/e2e.txt
echo "== e2e t=$(el): $(tail -2 $L/e2e.txt | tr '\n' ' ')"; grep -E "FAIL|gpu-hc-gates|side-branches.*decode" $L/e2e.txt | cut -c1-250; save
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
timeout 150 $NCU --profile-from-start off --csv --cache-control none --clock-control none --metrics gpu__time_duration.sum \
    $G/test_gpu_model --profile-step 6 > $L/step6.csv 2> $L/step6_err.txt; echo "ncu exit $? t=$(el)"
python3 scripts/ncu_step_breakdown.py $L/step6.csv > $L/step6_breakdown.txt 2>&1; head -45 $L/step6_breakdown.txt; save
echo "done t=$(el)"
