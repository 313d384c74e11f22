#!/usr/bin/env bash
# Session 28 lead, call l28h (H200): hc_post_pre_norm's f_add (the FFN's add fused into the next update): parity of the
# mHC family, the decode step main 0443cb6 (base) / new alternating (with the in-process DSV4_HC_FUSE_ADD 0 / 1 A/B),
# then the full test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28h/l28h.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28h; rm -rf $L; mkdir -p $L/e2e; save() { tar czf $OUT/l28h_logs.tgz -C $L . 2>/dev/null; }
timeout 120 $G/test_backend_ops --filter hc_post_pre_norm,hc_post_pre_norm_gates,hc_post_pre_norm_refusals,hc_pre,hc_post,hc_head,add > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 150 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(tail -2 $L/e2e/${b}_r$r.txt | tr '\n' ' ')"; grep -E "FAIL|decode step \(batch" $L/e2e/${b}_r$r.txt | grep -E "repacked-experts.*decode|hc-gates.*decode|fuse-add.*decode|FAIL" | cut -c1-250; save
done; done
timeout 300 $G/test_gpu_model > $L/gpu_model_full.txt 2>&1; echo "exit $?" >> $L/gpu_model_full.txt; echo "== full t=$(el): $(tail -2 $L/gpu_model_full.txt | tr "\n" " ")"; grep -E "FAIL" $L/gpu_model_full.txt | head; save
echo "done t=$(el)"
