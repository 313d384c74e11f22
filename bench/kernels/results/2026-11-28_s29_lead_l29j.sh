#!/usr/bin/env bash
# Session 29 lead, call l29j (H200): main's code (73ade6e) with test_gpu_model's DSV4_TEST_DIRTY_MEMORY (free device
# memory filled with 0xff before each schedule's runner loads): does any run read device memory it never wrote?
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29j
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do
  DSV4_TEST_DIRTY_MEMORY=1 timeout -s KILL 100 $G/test_gpu_model --only-kv-fp8 > $L/kv_dirty_r$r.txt 2>&1; echo "exit $?" >> $L/kv_dirty_r$r.txt
  echo "dirty r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_dirty_r$r.txt) $(tail -2 $L/kv_dirty_r$r.txt | tr '\n' ' ')"; save
done
timeout -s KILL 100 $G/test_gpu_model --only-kv-fp8 > $L/kv_clean.txt 2>&1; echo "exit $?" >> $L/kv_clean.txt
echo "clean t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_clean.txt) $(tail -2 $L/kv_clean.txt | tr '\n' ' ')"; save
DSV4_TEST_DIRTY_MEMORY=1 timeout -s KILL 250 $G/test_gpu_model > $L/full_dirty.txt 2>&1; echo "exit $?" >> $L/full_dirty.txt
echo "== full dirty t=$(el): $(tail -2 $L/full_dirty.txt | tr '\n' ' ')"; grep FAIL $L/full_dirty.txt | head -8 | cut -c1-250; save
echo "done t=$(el)"
