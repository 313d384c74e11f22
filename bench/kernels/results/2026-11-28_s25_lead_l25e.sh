#!/usr/bin/env bash
# Session 25 lead, call l25e: the attention compressors on the side branch too (DSV4_SIDE_BRANCH mask: 1 shared expert,
# 2 compressors), the final mHC thresholds and the rms_norm gate; against main f96e1cc.
# 1. parity: test_gpu_model (all) beside the rms_norm / mHC families
# 2. decode step: base / mask 0 / 1 / 2 / 3, alternating, 3 rounds (--only-repacked)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25e/l25e.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l25e; rm -rf $L; mkdir -p $L/e2e
( timeout 100 $G/test_backend_ops --filter rms_norm,hc_pre,hc_head,hc_pre_kernels_agree,hc_head_kernels_agree,hc_pre_split_refusals,hc_post > $L/parity_ops.txt 2>&1; echo "exit $?" >> $L/parity_ops.txt ) &
( timeout 170 $G/test_gpu_model > $L/parity_gpu_model.txt 2>&1; echo "exit $?" >> $L/parity_gpu_model.txt ) &
wait
for f in $L/parity_*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -6 | cut -c1-220; done
echo "parity t=$(el)"
for r in 1 2 3; do for b in base 0 1 2 3; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  if [ $b = base ]; then unset DSV4_SIDE_BRANCH; else export DSV4_SIDE_BRANCH=$b; fi
  timeout 90 $bin --only-repacked > $L/e2e/m${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/m${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'gpu-repacked-experts.*decode step' $L/e2e/m${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): checkpoint [0-9.]* ms, repacked /b\1 /' | tr '\n' ';' | cut -c1-300) $(tail -1 $L/e2e/m${b}_r$r.txt)"
done; done
unset DSV4_SIDE_BRANCH
tar czf $OUT/l25e_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
