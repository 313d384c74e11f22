#!/usr/bin/env bash
# Session 27 lead, call l27b: FP8 blocks made by their producers (43c9b4a) + side branches. Parity of the touched
# families; test_gpu_model --only-repacked new / base / new (gpu-side-branches, gpu-fp8-blocks bitwise + step times),
# new with DSV4_HC_FUSE=0 (the composed fallback); then the full test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l27b/l27b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l27b; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l27b_logs.tgz -C $L . 2>/dev/null; }
timeout 150 $G/test_backend_ops --filter rms_norm,rms_norm_fp8_blocks,hc_post_pre_norm,hc_post_pre_norm_refusals,hc_post,linear_decode_fp8act,linear_decode_fp8act_quantized,linear_decode_fp8act_plans > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
run() { timeout $3 env ${@:4} > $L/$2.txt 2>&1; echo "exit $?" >> $L/$2.txt; echo "== $2 t=$(el): $(tail -2 $L/$2.txt | tr '\n' ' ')"; grep -E "FAIL|side-branches|fp8-blocks|decode step" $L/$2.txt | cut -c1-300; save; }
run test_gpu_model new_r1 150 $G/test_gpu_model --only-repacked
run test_gpu_model base_r1 90 $G/test_gpu_model_base --only-repacked
run test_gpu_model new_r2 150 $G/test_gpu_model --only-repacked
run test_gpu_model nofuse 150 DSV4_HC_FUSE=0 $G/test_gpu_model --only-repacked
run test_gpu_model full 280 $G/test_gpu_model
echo "done t=$(el)"
