#!/bin/bash
# MOE14 run 1: bench A/B in one process at T = 4 / 16 / 64 (Flash, Pro; official bf16 MXFP4
# repacked): 127 (default; 16 at T <= 4 only) as control C1 / C2 / C3 (three spellings of one
# mask) bracketing 255 (= 127 + 128: 16 at T > 4 too) N1 / N2; then parity in parallel (all
# MoE-decode families of the official repacked path, the chain families incl. the new 255
# cases; every chain case bit-equal to chain 0), test_gpu_model under 127 and 255.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe14/bins.tar.xz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
C1=s0x4.2.4hwlpfgm; N1=s0x4.2.4hwlpfgmt; C2=s0x4.2.4mgfplwh; N2=s0x4.2.4tmgfplwh; C3=s0x4.2.4lwhpfgm
timeout 80 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab $C1,$N1,$C2,$N2,$C3 --formats mxfp4 --tokens 4,16,64 --replays 15 > $OUT/bench.txt 2>&1
echo "bench exit $?"
grep -E "read-only kernel  4096|launch floor|speed vs|rror|differ|trap|illegal" $OUT/bench.txt
grep -E "rp official s0x4" $OUT/bench.txt | awk '{print $1,$4,$5,$7,$8,$10}'
O=moe_decode_official_repacked
F1=$O
F2=${O}_chain255,${O}_rt8_chain255,${O}_xs_chain255,moe_decode_repacked_chain255
F3=${O}_chain127,${O}_rt8_chain127,${O}_chain31,${O}_rt2_chain31,${O}_rt8_chain31,${O}_xs_chain31,moe_decode_repacked_chain31,moe_decode_official_chain31
F4=${O}_chain63,${O}_chain16,${O}_chain48,${O}_xs,${O}_rt2,${O}_rt8,${O}_rt16,${O}_rt2_xs,${O}_chain15,${O}_chain7,${O}_chain8,${O}_xs_chain15
F5=moe_decode_official,${O}_q4,${O}_xs_q4,${O}_xs_sp2,${O}_xs_sp8,${O}_chain5,${O}_chain0
for i in 1 2 3 4 5; do eval F=\$F$i; (timeout 75 $B/test_backend_ops --filter $F > $OUT/parity_g$i.txt 2>&1; echo "exit $?" >> $OUT/parity_g$i.txt) & done
(timeout 75 $B/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
(timeout 75 $B/test_gpu_model --moe-decode-chain 255 > $OUT/gpu_model_255.txt 2>&1; echo "exit $?" >> $OUT/gpu_model_255.txt) &
wait
for i in 1 2 3 4 5; do f=parity_g$i; echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -12
for f in gpu_model gpu_model_255; do echo "== $f: $(grep -E 'passed, [0-9]+ failed' $OUT/$f.txt | tail -1); $(tail -1 $OUT/$f.txt)"; grep -E "repacked-experts.*bitwise|FAIL|rror" $OUT/$f.txt | head -4; done
