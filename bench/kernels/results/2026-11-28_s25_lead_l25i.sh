#!/usr/bin/env bash
# Session 25 lead, call l25i: the attention's KV path on the side branch in HCA and sliding layers against l25g's tree
# (e1b6ec5; the same code with DSV4_SIDE_BRANCH=3): test_gpu_model (all), then the decode step, three rounds of
# prev / new / new with mask 3, alternating.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25i/l25i.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l25i; rm -rf $L; mkdir -p $L/e2e
timeout 200 $G/test_gpu_model > $L/parity_gpu_model.txt 2>&1; echo "exit $?" >> $L/parity_gpu_model.txt
f=$L/parity_gpu_model.txt; echo "== gpu_model: $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1); $(tail -1 $f)"; grep FAIL $f | head -5 | cut -c1-200
echo "parity t=$(el)"
for r in 1 2 3; do for b in prev new m3; do
  bin=$G/test_gpu_model; [ $b = prev ] && bin=$G/test_gpu_model_prev
  if [ $b = m3 ]; then export DSV4_SIDE_BRANCH=3; else unset DSV4_SIDE_BRANCH; fi
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'gpu-repacked-experts.*decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): checkpoint [0-9.]* ms, repacked /b\1 /' | tr '\n' ';' | cut -c1-300) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
unset DSV4_SIDE_BRANCH
tar czf $OUT/l25i_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
