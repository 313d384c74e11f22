#!/usr/bin/env bash
# Session 29 lead, call l29l (H200): main's test_gpu_model --only-kv-fp8, whose "general kernels (records gathered)"
# check (eager, decode kernels off: two runs compared bit for bit) failed in l29k on main's binary: the default
# against DSV4_HC_GATES_APART=0 (the mHC gates in the finish launch) and DSV4_SIDE_BRANCH=0 (no side branches), rotating.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29l
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2 3 4; do for v in default gates0 side0; do
  case $v in default) E="";; gates0) E="DSV4_HC_GATES_APART=0";; side0) E="DSV4_SIDE_BRANCH=0";; esac
  env $E timeout -s KILL 100 $G/test_gpu_model_base --only-kv-fp8 > $L/${v}_r$r.txt 2>&1; echo "exit $?" >> $L/${v}_r$r.txt
  echo "$v r$r t=$(el): $(grep -o 'general kernels (records gathered): [0-9]* differing of [0-9]*' $L/${v}_r$r.txt) $(tail -2 $L/${v}_r$r.txt | tr '\n' ' ')"; save
done; done
echo "done t=$(el)"
