#!/usr/bin/env bash
# Session 29 lead, call l29n (H200): test_gpu_model --only-kv-fp8 repeated (44daa23: the general-kernel records check
# prints its differing steps and distance when it fails), to catch the flake with details.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29n
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2 3 4 5 6 7 8; do
  timeout -s KILL 60 $G/test_gpu_model --only-kv-fp8 > $L/kv_r$r.txt 2>&1; echo "exit $?" >> $L/kv_r$r.txt
  echo "r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/kv_r$r.txt) $(grep 'general kernels: differing' $L/kv_r$r.txt | cut -c40-) $(tail -2 $L/kv_r$r.txt | tr '\n' ' ')"; save
  [ $(el) -gt 150 ] && break
done
echo "done t=$(el)"
