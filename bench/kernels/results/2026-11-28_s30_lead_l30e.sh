#!/usr/bin/env bash
# Session 30 lead, call l30e (H200): as l30d (linear_gemm_streams on the tree's test_backend_ops and on the variant
# with cuBLAS's internal pool), with the case's gate bounded to 2 s (l30d: the variant hung at 8 tokens); two rounds,
# no family run.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l30e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do
  for b in test_backend_ops test_backend_ops_pool; do
    timeout -s KILL 60 $G/$b --filter linear_gemm_streams > $L/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/${b}_r$r.txt
    echo "r$r $b t=$(el):"; grep -E "linear_gemm_streams|passed" $L/${b}_r$r.txt | cut -c1-220; save
  done
done
echo "done t=$(el)"
