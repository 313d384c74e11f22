#!/usr/bin/env bash
# Session 24 lead, call l24e (H200): W8A8 K parts per tile with the new default plan (x lead 2, late scales >= 64 MiB):
# bench_linear_gemm --w8a8-ks (default split vs 1-16 K parts, alternating in one process).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24e/l24e.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24e; rm -rf $L; mkdir -p $L
timeout 300 $G/bench_linear_gemm --w8a8-ks 2 > $L/ks.txt 2>&1; echo "exit $?" >> $L/ks.txt
echo "ks t=$(el)"; grep -E "ceiling|^ks|exit" $L/ks.txt | cut -c1-420
tar czf $OUT/l24e_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
