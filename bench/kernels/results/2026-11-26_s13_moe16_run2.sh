#!/usr/bin/env bash
# MOE16 device call 2: bench of four binaries, base (main db1a561), ns (84d6505 built with
# -DDSV4_MOE16_SPLIT=0: pointer / address bookkeeping only), new (84d6505: plus the non-staged
# loop's main part without the refill check) and next (wip/moe16-next e6be43c: that main part four
# rounds per iteration), order base ns new next base, default config, official bf16 MXFP4
# repacked, T = 1/4/16/64, Flash and Pro; then parity of new (84d6505) beside test_gpu_model.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe16/bins.tar.xz $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe16
nvidia-smi -L; cat $B/commit.txt
N=s0x4.2.4hwlpfgmc
for v in base ns new next base2; do
  bin=$B/bench_kernels/bench_moe_linear; [ $v = base ] || [ $v = base2 ] && bin=$B/base/bench_moe_linear; [ $v = ns ] && bin=$B/nosplit/bench_moe_linear; [ $v = next ] && bin=$B/next/bench_moe_linear
  timeout 18 stdbuf -oL -eL $bin --decode-ab --ab-official --ab $N,$N --formats mxfp4 --tokens 1,4,16,64 --replays 15 >$OUT/bench_$v.txt 2>&1
  echo "bench $v exit $? $(grep -E 'read-only kernel  4096' $OUT/bench_$v.txt)"
  grep -E "rp official" $OUT/bench_$v.txt | awk '{printf "%s T=%s %s %s | ", $1, $7, $9, $11} NR%4==0 {print ""}'
done
O=moe_decode_official_repacked
F1=${O}_chain383,${O}_rt2_chain383,${O}_rt8_chain383,${O}_xs_chain383,${O}_rtf99_chain383
F2=${O}_rtf10_chain383,${O}_rtf20_chain383,${O}_rtf40_chain383,${O}_rtf1_chain383,${O}_rtf2_chain383,${O}_rtf12_chain383
F3=moe_decode_repacked,moe_decode
for i in 1 2 3; do eval F=\$F$i; (timeout 40 $B/test_backend_ops --filter $F >$OUT/parity_g$i.txt 2>&1; echo "exit $?" >>$OUT/parity_g$i.txt) & done
(timeout 40 $B/test_gpu_model >$OUT/gpu_model.txt 2>&1; echo "exit $?" >>$OUT/gpu_model.txt) &
wait
for i in 1 2 3; do f=parity_g$i; echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -8
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "FAIL|rror" $OUT/gpu_model.txt | head -4
