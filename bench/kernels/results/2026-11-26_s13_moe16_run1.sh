#!/usr/bin/env bash
# MOE16 device call 1: bench A/B of two binaries (base = main db1a561, new = wip/moe16) at the
# default config, official bf16 MXFP4 repacked, T = 1/4/16/64, Flash and Pro; then parity
# (chain 383 families, exact-order repacked, checkpoint layout) beside test_gpu_model.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe16/bins.tar.xz $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe16
nvidia-smi -L; cat $B/commit.txt
N=s0x4.2.4hwlpfgmc
for v in base new; do
  bin=$B/bench_kernels/bench_moe_linear; [ $v = base ] && bin=$B/base/bench_moe_linear
  timeout 26 stdbuf -oL -eL $bin --decode-ab --ab-official --ab $N,$N --formats mxfp4 --tokens 1,4,16,64 --replays 15 >$OUT/bench_$v.txt 2>&1
  echo "bench $v exit $?"
  grep -E "read-only kernel  4096" $OUT/bench_$v.txt
  grep -E "rp official" $OUT/bench_$v.txt | awk '{print $1,$6,$8,$9,$10}' | paste - - | awk '{print $1,$2,$3,$5,$9,$10}'
done
O=moe_decode_official_repacked
F1=${O}_chain383,${O}_rt2_chain383,${O}_rt8_chain383,${O}_xs_chain383,${O}_rtf99_chain383,${O}_rtf10_chain383,${O}_rtf20_chain383,${O}_rtf40_chain383,${O}_rtf1_chain383,${O}_rtf2_chain383,${O}_rtf12_chain383
F2=moe_decode_repacked
F3=moe_decode,${O}_xs,${O}_rt2,${O}_rt8
for i in 1 2 3; do eval F=\$F$i; (timeout 38 $B/test_backend_ops --filter $F >$OUT/parity_g$i.txt 2>&1; echo "exit $?" >>$OUT/parity_g$i.txt) & done
(timeout 38 $B/test_gpu_model >$OUT/gpu_model.txt 2>&1; echo "exit $?" >>$OUT/gpu_model.txt) &
wait
for i in 1 2 3; do f=parity_g$i; echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -8
echo "== gpu_model: $(grep -c -E '^\s*(ok|OK|PASS)' $OUT/gpu_model.txt) ; $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "FAIL|rror" $OUT/gpu_model.txt | head -4
