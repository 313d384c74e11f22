#!/usr/bin/env bash
# Session 25 lead, call l25j: the final tree (643c836; code = 679d853: everything of the session, review commits
# SASS-identical): parity (linear families incl. repacked | test_gpu_model; mHC / rms_norm; --only-repacked-dense),
# then the decode step against main f96e1cc, two rounds.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25j/l25j.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l25j; rm -rf $L; mkdir -p $L/e2e $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p linear 200 --filter linear_decode,linear_decode_grouped,linear_decode_ring,linear_decode_lead,linear_decode_repacked,linear_gemm_repacked,linear_gemm &
( timeout 200 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
p ops 100 --filter rms_norm,hc_pre,hc_head,hc_pre_kernels_agree,hc_head_kernels_agree,hc_pre_split_refusals,hc_post
timeout 90 $G/test_gpu_model --only-repacked-dense > $P/gpu_model_dense.txt 2>&1; echo "exit $?" >> $P/gpu_model_dense.txt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -6 | cut -c1-220; done
grep -E "gpu-repacked-dense" $P/gpu_model_dense.txt | cut -c1-300
echo "parity t=$(el)"
for r in 1 2; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'gpu-repacked-experts.*decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): checkpoint [0-9.]* ms, repacked /b\1 /' | tr '\n' ';' | cut -c1-300) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
tar czf $OUT/l25j_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
