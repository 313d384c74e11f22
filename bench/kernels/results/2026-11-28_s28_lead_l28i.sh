#!/usr/bin/env bash
# Session 28 lead, call l28i (H100): the final code (e94d530: the split workspace check shared): the mHC family's parity and
# refusals, test_gpu_model --only-repacked.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28i/l28i.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28i; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l28i_logs.tgz -C $L . 2>/dev/null; }
timeout 120 $G/test_backend_ops --filter hc_post_pre_norm,hc_post_pre_norm_gates,hc_post_pre_norm_refusals,hc_pre,hc_pre_split_refusals,hc_post,hc_head,linear_decode_grouped > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
timeout 150 $G/test_gpu_model --only-repacked > $L/e2e.txt 2>&1; echo "exit $?" >> $L/e2e.txt
echo "== e2e t=$(el): $(tail -2 $L/e2e.txt | tr '\n' ' ')"; grep -E "FAIL|decode step \(batch" $L/e2e.txt | grep -E "repacked-experts.*decode|hc-gates.*decode|FAIL" | cut -c1-250; save
echo "done t=$(el)"
