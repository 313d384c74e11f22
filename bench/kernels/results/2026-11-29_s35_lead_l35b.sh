#!/usr/bin/env bash
# Session 35 lead, call l35b (H200): issue 6's figures on main 92958ce's binaries: test_gpu_model; the memory-bound
# decode shapes in a decode graph behind the query's writer (bench_attention --chain-early: plain and engine-like
# triggering writer, tables early off / on, event rows); bf16 pools vs FP8 records (--kv-fp8-ab, event-timed); the
# indexer per call in a graph of 8 (--indexer-chain); compute-bound rows (prefill HCA 128K T=4096, Pro HCA 1M T=64).
set -uo pipefail
nvidia-smi -L
N=l35b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep -E "FAIL" $L/gpu_model.txt | head -5 | cut -c1-250; save
C="1,64,hca,1048576,0;2,64,hca,1048576,0;4,64,hca,1048576,0;8,64,hca,1048576,0;16,64,hca,1048576,0;32,64,hca,1048576,0;1,64,hca,131072,0;32,64,hca,131072,0;1,64,hca,8192,0;1,64,csa,1048576,512;32,64,csa,1048576,512;32,128,hca,1048576,0"
timeout -s KILL 260 $G/bench_attention --chain-early --cases "$C" > $L/chain.txt 2>&1; echo "chain exit $? t=$(el)"; save
grep -E "ceiling" $L/chain.txt | head -3
grep -E "pred (plain|trig): off / early|chain-early S" $L/chain.txt | head -40
if [ $(el) -lt 470 ]; then
  timeout -s KILL 60 $G/bench_attention --kv-fp8-ab --cases "32,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0" > $L/kvfp8.txt 2>&1; echo "kvfp8 exit $? t=$(el)"; save
  grep -E "ceiling|pools plan|fp8/bf16" $L/kvfp8.txt | head -12 | cut -c1-170
fi
if [ $(el) -lt 520 ]; then
  timeout -s KILL 40 $G/bench_attention --indexer-chain > $L/idx.txt 2>&1; echo "idx exit $? t=$(el)"; save
  grep -E "per call|1 call|floor" $L/idx.txt | head -8 | cut -c1-170
fi
if [ $(el) -lt 540 ]; then
  timeout -s KILL 50 $G/bench_attention --prefill --prefill-chunks 4096 --prefill-cases "4096,64,hca,131072,0;4096,128,hca,131072,0" > $L/prefill.txt 2>&1; echo "prefill exit $? t=$(el)"; save
  grep -E "ceiling|TFLOP" $L/prefill.txt | grep -v "^ *floor" | head -10 | cut -c1-170
fi
if [ $(el) -lt 570 ]; then
  timeout -s KILL 25 $G/bench_attention --kv-fp8-ab --cases "64,128,hca,1048576,0" > $L/t64.txt 2>&1; echo "t64 exit $? t=$(el)"; save
  grep -E "pools plan" $L/t64.txt | head -4 | cut -c1-170
fi
echo "done t=$(el)"
