#!/usr/bin/env bash
# Session 19 ATTN29, prepared for the lead, NOT RUN: the final tree (5aefdb0: maps parameter only in the
# key_tma instances, TMA only in splits of >= 16 tiles). Binaries: new = wip/attn29 final, main = main with
# ATTN28 (94ec700 or later, before this merge), base = main 4a2dd45. Parity (attention families; each ws case
# on bf16 pools bit for bit vs diag 16 and diag 32) and test_gpu_model, then bench_attention --steps (HCA 8K
# T=1/8, CSA T=1/8, HCA 1M T=8/32) and --focus, alternating binaries, two rounds each. Expected (call 1's
# kernels): CSA and HCA shapes under 16 tiles per split at 4a2dd45's times, HCA 1M T=8/32 and Pro HCA at main's.
# Archive: .bin/attn29/attn29_r2.tar.xz with test_backend_ops, test_gpu_model, bench_attention (new),
# bench_attention_main, bench_attention_base, source_root.txt, commit.txt.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-attn29; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/attn29/attn29_r2.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=$OUT/logs; mkdir -p $L
if [ -x $G/test_gpu_model ]; then (timeout 100 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt) & fi
F=attention_decode,attention_decode_fold,attention_decode_fp8,sparse_attention
(timeout 100 $G/test_backend_ops --filter $F > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt) &
wait
for f in parity; do
  echo "== $f: $(grep -c ' OK' $L/$f.txt) OK, $(grep -c FAIL $L/$f.txt) FAIL; $(grep -E 'passed' $L/$f.txt | tail -1); $(tail -1 $L/$f.txt)"
  grep FAIL $L/$f.txt | head -5 | cut -c1-250
done
[ -f $L/gpu_model.txt ] && echo "== gpu_model: $(grep -E 'passed|failed' $L/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $L/gpu_model.txt)"
echo "parity t=$(el)"
C="1,64,hca,8192,0;8,64,hca,8192,0;1,64,csa,1048576,512;8,64,csa,1048576,512;8,64,hca,1048576,0;32,64,hca,1048576,0"
runb() {  # runb NAME MODE ROUND
  local n=$1 m=$2 r=$3 bin=$G/bench_attention env=""
  [ $n = base ] && bin=$G/bench_attention_base
  [ $n = main ] && bin=$G/bench_attention_main
  if [ $m = steps ]; then
    env $env timeout 40 $bin --steps --cases "$C" > $L/steps_${n}_r$r.txt 2>&1; echo "steps $n r$r rc=$? t=$(el)"
    awk '/^  plan S.* graph/ {for(i=1;i<=NF;i++) if($i ~ /^(HCA|CSA)$/) s=$i" "$(i+1)" "$(i+3); printf "   %s S%s: %s", s, $2, $(NF-3); getline; if($0 ~ /graph r2/) printf " / %s", $(NF-3); printf "\n"} /variants \(graph/ {print "     " $0}' $L/steps_${n}_r$r.txt | sed -E 's/ +/ /g; s/\(ldgsts \/ this 1.000x\); //' | cut -c1-140
  else
    env $env timeout 30 $bin --focus > $L/focus_${n}_r$r.txt 2>&1; echo "focus $n r$r rc=$? t=$(el)"
    echo "   $(grep -E '^    plan' $L/focus_${n}_r$r.txt | awk '{printf "%s ", $(NF-3)}')"
  fi
}
for n in main new base; do [ $(el) -lt 120 ] && runb $n steps 1; done
for n in base new main; do [ $(el) -lt 135 ] && runb $n steps 2; done
for n in main new base; do [ $(el) -lt 160 ] && runb $n focus 1; done
for n in base new main; do [ $(el) -lt 175 ] && runb $n focus 2; done
cd $OUT && tar czf attn29_logs.tgz logs && rm -rf logs
echo "done t=$(el)"; ls $OUT
