#!/usr/bin/env bash
# Session 26 lead, call l26b: hc_post_pre_norm with its loads batched (500e8fd): parity (mHC / rms_norm families incl.
# the fused op | test_gpu_model), perf of the fused op against the chain it replaces, the decode step against main
# 6931456 (base) and against the same binary with DSV4_HC_FUSE=0, two rounds; ncu device time per kernel of one step.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l26b/l26b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l26b; rm -rf $L; mkdir -p $L/e2e $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ops 100 --filter rms_norm,hc_pre,hc_head,hc_pre_kernels_agree,hc_head_kernels_agree,hc_pre_split_refusals,hc_post,hc_post_pre_norm,hc_post_pre_norm_refusals &
( timeout 200 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -8 | cut -c1-220; done
grep -E "hc_post_pre_norm" $P/ops.txt | head -20 | cut -c1-200
echo "parity t=$(el)"
timeout 60 $G/test_backend_ops --perf --filter "hc_post_pre_norm,hc_post_pre_norm chain" > $L/perf_hc.txt 2>&1; echo "exit $?" >> $L/perf_hc.txt
grep -E "hc_post_pre_norm" $L/perf_hc.txt | cut -c1-160; echo "perf t=$(el)"
for r in 1 2; do for b in base new nofuse; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  if [ $b = nofuse ]; then DSV4_HC_FUSE=0 timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; else timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; fi
  echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';' | cut -c1-400) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
timeout 100 $NCU --profile-from-start off --csv --cache-control none --clock-control none --metrics gpu__time_duration.sum \
  $G/test_gpu_model --profile-step 6 > $L/step6.csv 2> $L/step6_err.txt; echo "ncu exit $? t=$(el)"
python3 scripts/ncu_step_breakdown.py --list $L/step6.csv > $L/step6_breakdown.txt 2>&1; sed -n "/launches,/,\$p" $L/step6_breakdown.txt | head -32
tar czf $OUT/l26b_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
