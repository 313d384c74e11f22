#!/bin/bash
# MOE14 run 2 (binaries with 16 up to T = 16 by default): bench A/B in one process at T = 8 / 16
# (Flash, Pro; official bf16 MXFP4 repacked): 15 (= the launches of run 1's default at T > 4)
# as control C1 / C2 / C3 (three spellings) bracketing 127 (the default: 16 at T <= 16) N1 / N2;
# then parity in parallel (the default family, the chain families incl. the rest of the 255
# cases; chain cases bit-equal to chain 0), test_gpu_model under 127 and 255.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe14/bins.tar.xz -C $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe14
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
C1=s0x4.2.4hwlp; N1=s0x4.2.4hwlpfgm; C2=s0x4.2.4lwhp; N2=s0x4.2.4mgfplwh; C3=s0x4.2.4pwhl
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab $C1,$N1,$C2,$N2,$C3 --formats mxfp4 --tokens 8,16 --replays 15 > $OUT/bench.txt 2>&1
echo "bench exit $?"
grep -E "read-only kernel  4096|launch floor|speed vs|rror|differ|trap|illegal" $OUT/bench.txt
grep -E "rp official s0x4" $OUT/bench.txt | awk '{print $1,$4,$5,$7,$8,$9,$10}'
O=moe_decode_official_repacked
F1=$O
F2=${O}_chain255,${O}_chain63,${O}_chain16,${O}_chain48
F3=${O}_chain127,${O}_rt8_chain127,${O}_chain31,moe_decode_repacked_chain31,moe_decode_official_chain31
F4=${O}_xs,${O}_rt2,${O}_rt8,${O}_rt16,${O}_rt2_xs,${O}_xs_chain255,${O}_rt8_chain255,${O}_xs_chain31,${O}_rt2_chain31,${O}_rt8_chain31,moe_decode_repacked_chain255
F5=${O}_chain15,${O}_chain7,${O}_chain8,${O}_xs_chain15,${O}_chain0
F6=${O}_chain5,${O}_q4,${O}_xs_q4,${O}_xs_sp2,${O}_xs_sp8
for i in 1 2 3 4 5 6; do eval F=\$F$i; (timeout 85 $B/test_backend_ops --filter $F > $OUT/parity_g$i.txt 2>&1; echo "exit $?" >> $OUT/parity_g$i.txt) & done
(timeout 85 $B/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
(timeout 85 $B/test_gpu_model --moe-decode-chain 255 > $OUT/gpu_model_255.txt 2>&1; echo "exit $?" >> $OUT/gpu_model_255.txt) &
wait
for i in 1 2 3 4 5 6; do f=parity_g$i; echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -12
for f in gpu_model gpu_model_255; do echo "== $f: $(grep -E 'passed, [0-9]+ failed' $OUT/$f.txt | tail -1); $(tail -1 $OUT/$f.txt)"; grep -E "repacked-experts.*bitwise|FAIL|rror" $OUT/$f.txt | head -4; done
