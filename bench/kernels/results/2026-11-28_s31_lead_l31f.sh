#!/usr/bin/env bash
# Session 31 lead, call l31f (H200): SASS of the alternate-tile kernels base / new, bench_attention --kv-fp8-ab base / new
# alternating (2 rounds), --alt-rows at HCA 1M T=32 (base dca405c, new = + the softmax_local branch).
set -uo pipefail
nvidia-smi -L
N=l31f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for b in bench_attention_base bench_attention; do
  cuobjdump -sass $G/$b 2>/dev/null | awk '/Function :/{keep = ($3 ~ /attention_decode_ws_kernelILi3E/)} keep' > $L/sass_$b.txt
  echo "$b: $(awk '/Function :/{n++} /HGMMA/{h++} /WARPGROUP.DEPBAR/{d++} END{print n" kernels, HGMMA "h", DEPBAR "d}' $L/sass_$b.txt)"
done
xz -9 $L/sass_*.txt; save
C="32,64,hca,1048576,0;16,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0;32,64,hca,131072,0;32,64,csa,1048576,512;32,128,csa,1048576,1024;1,64,hca,1048576,0"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 150 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 100 $bin --alt-rows --no-ceilings --cases "32,64,hca,1048576,0" > $L/alt_$b.txt 2>&1; echo "alt $b exit $? t=$(el)"; save
done
grep -h "plan\|diag no\|r2 alt " $L/alt_*.txt | cut -c1-160
echo "done t=$(el)"
