#!/usr/bin/env bash
# Session 29 lead, call l29a (H200): the seesaw decode kernel (plan.seesaw): parity of the attention_decode family
# (every kernel, the seesaw cases among them), then bench_attention --seesaw-ab (the engine's plan on the ws kernel vs
# the seesaw kernel, bounds, graph replays alternating).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
N=l29a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 240 $G/test_backend_ops --filter attention_decode > $L/ops.txt 2>&1; echo "exit $?" >> $L/ops.txt
echo "== ops t=$(el): $(grep -c ' OK' $L/ops.txt) OK, $(grep -c FAIL $L/ops.txt) FAIL; $(tail -2 $L/ops.txt | tr '\n' ' ')"
grep seesaw $L/ops.txt | cut -c1-220 | head -30; grep FAIL $L/ops.txt | head -10 | cut -c1-250; save
timeout -s KILL 240 $G/bench_attention --seesaw-ab > $L/seesaw_ab.txt 2>&1; echo "bench exit $? t=$(el)"
grep -vE "^\s+trace|^\s+ entry" $L/seesaw_ab.txt | cut -c1-200; save
echo "done t=$(el)"
