#!/usr/bin/env bash
# Session 34 lead, call l34h (H200): hc_post_pre_norm's finish kernel triggers the sub-layer's first kernel first thing
# (DSV4_HC_FINISH_TRIGGER=0: at its exit): the mHC parity families, test_gpu_model --only-repacked (the decode-step
# A/B of the switch: bitwise logits, step times, 3 pairs alternating) and the full test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l34h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 90 $G/test_backend_ops --filter hc_pre,hc_post,hc_head,hc_pre_split_refusals,hc_post_pre_norm,hc_post_pre_norm_gates > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-220; save
for r in 1 2; do
timeout -s KILL 150 $G/test_gpu_model --only-repacked > $L/repacked_r$r.txt 2>&1; echo "exit $?" >> $L/repacked_r$r.txt
echo "== repacked r$r t=$(el): $(tail -2 $L/repacked_r$r.txt | tr '\n' ' ')"; grep -E "FAIL|gpu-hc-trigger|gpu-tables-early\] .*decode" $L/repacked_r$r.txt | cut -c1-250; save
done
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep -E "FAIL|gpu-hc-trigger\] .*decode" $L/gpu_model.txt | head -8 | cut -c1-250; save
echo "done t=$(el)"
