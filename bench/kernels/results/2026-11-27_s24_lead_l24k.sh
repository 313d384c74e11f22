#!/usr/bin/env bash
# Session 24 lead, call l24k (H200): the review commit's bench_linear_gemm (the three W8A8 plan modes on one timing
# loop) runs its modes once: --w8a8-xlead 1, --w8a8-ks 1, --w8a8-ab (rows and figures as before).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24k/l24k.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24k; rm -rf $L; mkdir -p $L
for m in "--w8a8-xlead 1" "--w8a8-ks 1" "--w8a8-ab"; do
  tag=$(echo $m | cut -d' ' -f1 | tr -d -); timeout 150 $G/bench_linear_gemm $m > $L/$tag.txt 2>&1; echo "exit $?" >> $L/$tag.txt
  echo "$m t=$(el): $(grep -c '|' $L/$tag.txt) rows; $(tail -1 $L/$tag.txt)"; grep -E "^(xlead|ks|ab) +pro.wq_b" $L/$tag.txt | head -2 | cut -c1-220
done
tar czf $OUT/l24k_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
