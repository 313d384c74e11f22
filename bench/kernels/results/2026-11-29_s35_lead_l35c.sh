#!/usr/bin/env bash
# Session 35 lead, call l35c (H200): the whole parity harness on main 92958ce's test_backend_ops (every op of
# `--list`, split into 12 groups balanced by case count, run in parallel: the CPU references use one core each), then
# compute-sanitizer memcheck and racecheck on the first case of every op (4 groups in parallel each).
set -uo pipefail
nvidia-smi -L
N=l35c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
$G/test_backend_ops --list > $L/list.txt 2>&1
groups() {  # N: greedy split of the ops by case count into N comma lists, one per line
  sort -k2,2nr $L/list.txt | awk -v n=$1 '{b=0; for(i=1;i<n;i++) if(s[i]<s[b]) b=i; s[b]+=$2; g[b]=g[b] (g[b]==""?"":",") $1} END{for(i=0;i<n;i++) print g[i]}'
}
groups 12 > $L/groups12.txt
i=0; while read -r f; do timeout -s KILL 330 $G/test_backend_ops --filter "$f" > $L/ops$i.txt 2>&1 & i=$((i+1)); done < $L/groups12.txt; wait
tot=0; fail=0; i=0; while read -r f; do
  ok=$(grep -c ' OK' $L/ops$i.txt); fl=$(grep -c FAIL $L/ops$i.txt); tot=$((tot+ok)); fail=$((fail+fl))
  echo "== ops$i t=$(el): $ok OK, $fl FAIL; $(tail -1 $L/ops$i.txt)"; grep FAIL $L/ops$i.txt | head -3 | cut -c1-220; i=$((i+1))
done < $L/groups12.txt
echo "== parity total: $tot OK, $fail FAIL of $(awk '{s+=$2} END{print s}' $L/list.txt) listed"; save
CS=/usr/local/cuda/bin/compute-sanitizer
groups 4 > $L/groups4.txt
for tool in memcheck racecheck; do
  i=0; while read -r f; do timeout -s KILL 150 $CS --tool $tool --error-exitcode 9 $G/test_backend_ops --filter "$f" --per-op 1 > $L/san_${tool}_$i.txt 2>&1 & i=$((i+1)); done < $L/groups4.txt; wait
  for i in 0 1 2 3; do echo "== $tool $i t=$(el): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$i.txt | tail -1) | $(grep -cE ' OK' $L/san_${tool}_$i.txt) OK $(grep -cE 'FAIL' $L/san_${tool}_$i.txt) FAIL | $(tail -1 $L/san_${tool}_$i.txt | cut -c1-120)"; done
  grep -hE "^========= (Invalid|Race|Error|Program hit)" $L/san_${tool}_*.txt | sort | uniq -c | head -10
  save
done
echo "done t=$(el)"
