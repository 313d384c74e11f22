#!/usr/bin/env bash
# Session 28 lead, call l28g (H100): l28f's binaries (049bc9a): parity of the touched families and the full test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28g/l28g.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28g; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l28g_logs.tgz -C $L . 2>/dev/null; }
timeout 200 $G/test_backend_ops --filter linear_decode_grouped,hc_post_pre_norm,hc_post_pre_norm_gates,hc_post_pre_norm_refusals,hc_pre,hc_post,hc_head > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
timeout 300 $G/test_gpu_model > $L/gpu_model_full.txt 2>&1; echo "exit $?" >> $L/gpu_model_full.txt; echo "== full t=$(el): $(tail -2 $L/gpu_model_full.txt | tr "\n" " ")"; grep -E "FAIL|hc-gates.*decode" $L/gpu_model_full.txt | head; save
echo "done t=$(el)"
