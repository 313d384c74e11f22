#!/usr/bin/env bash
# MOE15 device call 2 (binaries built on the build machine; default chain 383 = 127 + 256, the W2
# occupancy cap): bench A/B in one process, official bf16 MXFP4 repacked, T = 1 / 4, Flash / Pro:
# B = 127 (main's default), N = 383, forced row tiles under 383 (s-10 / s-20 / s-40: W1/W3 RT 1 / 2
# / 4; s-2: W2 RT 2), B and N again as controls; the short-read ceilings; the trace of B and N;
# then parity (the 383 cases bit-equal to chain 0, the default families) beside test_gpu_model.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe15/bins.tar.xz $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe15
nvidia-smi -L; cat $B/commit.txt
X=s0x4.2.4; C=${X}hwlpfgm; N=${X}hwlpfgmc
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --formats mxfp4 --tokens 1,4 --replays 15 --short-read \
  --ab $C,$N,s-10x4.2.4hwlpfgmc,s-20x4.2.4hwlpfgmc,s-40x4.2.4hwlpfgmc,s-2x4.2.4hwlpfgmc,$C,$N >$OUT/bench.txt 2>&1
echo "bench exit $?"
grep -E "read-only kernel  4096|launch floor|speed vs|short-read .*(one launch|pair|triple)|rror|trap" $OUT/bench.txt | cut -c1-200
grep -E "rp official" $OUT/bench.txt | awk '{print $1,$4,$6,$8,$10}'
timeout 30 $B/trace/bench_moe_linear_trace --decode-ab --ab-official --ab $C,$N --formats mxfp4 --tokens 1 --replays 5 >$OUT/trace.txt 2>&1
echo "trace exit $?"
grep -E "^trace|^  (W1|W2|comb)" $OUT/trace.txt | awk '/^trace/{p=(/call 2:/)} p' | cut -c1-250
O=moe_decode_official_repacked
F1=${O}_chain383,${O}_rt2_chain383,${O}_rt8_chain383,${O}_xs_chain383,${O}_rtf10_chain383,${O}_rtf20_chain383
F2=${O}_rtf40_chain383,${O}_rtf1_chain383,${O}_rtf2_chain383,${O}_rtf12_chain383,${O}_xs,${O}_rt2,${O}_rt8,${O}_rt16,${O}_rt2_xs
F3=${O},${O}_q4,${O}_xs_q4,${O}_rt2_q4,${O}_xs_sp2,${O}_xs_q4_sp2,${O}_xs_sp8,${O}_xs_q4_sp8
for i in 1 2 3; do eval F=\$F$i; (timeout 80 $B/test_backend_ops --filter $F >$OUT/parity_g$i.txt 2>&1; echo "exit $?" >>$OUT/parity_g$i.txt) & done
(timeout 80 $B/test_gpu_model >$OUT/gpu_model.txt 2>&1; echo "exit $?" >>$OUT/gpu_model.txt) &
wait
for i in 1 2 3; do f=parity_g$i; echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -8
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "FAIL|rror" $OUT/gpu_model.txt | head -4
