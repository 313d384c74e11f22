#!/usr/bin/env bash
# Session 29 lead, call l29h (H200): test_gpu_model --only-kv-fp8, main 73ade6e (base) and the exp2_ftz tree alternating,
# three rounds: is the general-kernel records check's single differing step (l29g) the change's or a flake?
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2 3; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout -s KILL 100 $bin --only-kv-fp8 > $L/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/${b}_r$r.txt
  echo "$b r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/${b}_r$r.txt) $(tail -2 $L/${b}_r$r.txt | tr '\n' ' ')"; save
done; done
echo "done t=$(el)"
