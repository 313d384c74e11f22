#!/usr/bin/env bash
# Session 33 lead, call l33d (H200): bf16 partial rows for one row of work at 33-64 splits too
# (Flash HCA 128K / 256K / 512K T=1: 36 / 34 / 33 splits; HCA 1M T=1's 65 keep f32): parity,
# --steps on those shapes (plan / f32 part / split rows), --kv-fp8-ab base (e9f550c) / new.
set -uo pipefail
nvidia-smi -L
N=l33d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_backend_ops --filter attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"; grep FAIL $L/ops.txt | head -5 | cut -c1-200; save
S="1,64,hca,131072,0;1,64,hca,262144,0;1,64,hca,524288,0"
timeout -s KILL 200 $G/bench_attention --steps --cases "$S" > $L/steps_new.txt 2>&1; echo "steps exit $? t=$(el)"; save
grep "^  plan \|f32 part S\|^  split\|chain - pred" $L/steps_new.txt | grep -v " r2 " | cut -c1-110
C="1,64,hca,131072,0;1,64,hca,262144,0;1,64,hca,524288,0;1,64,hca,1048576,0;2,64,hca,131072,0;1,64,hca,8192,0;1,64,csa,1048576,512"
for r in 1 2; do for b in base new; do
  bin=$G/bench_attention; [ $b = base ] && bin=$G/bench_attention_base
  timeout -s KILL 120 $bin --kv-fp8-ab --cases "$C" > $L/ab_${b}_r$r.txt 2>&1; echo "ab $b r$r exit $? t=$(el)"; save
done; done
for b in base new; do echo "== $b"; grep -h "pools plan\|records plan" $L/ab_${b}_r*.txt | awk '{k=$1" "$2" "$4" "$5" "$6" "$7; v[k]=v[k]" "$(NF-3)} END{for(k in v) print k": "v[k]}' | sort; done
echo "done t=$(el)"
