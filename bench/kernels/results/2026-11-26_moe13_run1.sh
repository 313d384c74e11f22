#!/bin/bash
# MOE13 run 1: chain 31 (15 + 16: W2 waits per slot for h released by W1/W3's fold, the fold at
# every wave count and at T = 1, counters zeroed by the combine), 63 (31 + W2 exits without the
# grid wait), 79 (15 + 64: the fold and counters of 16, W2 waiting for the whole grid), 31 with
# W2 staged from T = 1 (x4.1.4), against 15 (main's default; kernels SASS-identical to main's) in
# the same process, 15 twice; then in parallel: parity of the MOE13 cases (each bit-equal to chain
# 0), the default families under the binary's default 31, and test_gpu_model.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe13/bins.tar.xz -C $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe13
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlp,s0x4.2.4hwlpm,s0x4.2.4hwlpf,s0x4.2.4hwlpfg,s0x4.1.4hwlpf,s0x4.2.4lwhp --formats mxfp4 --tokens 1,4 --replays 20 > $OUT/bench.txt 2>&1
echo "bench exit $?"
grep -E "read-only kernel  4096|launch floor|rp official|speed vs|rror|differ|trap|illegal" $OUT/bench.txt
O=moe_decode_official_repacked
F1=${O}_chain31
F2=${O}_chain63,${O}_chain16,${O}_chain79,${O}_rt2_chain31,${O}_rt8_chain31,${O}_xs_chain31,moe_decode_repacked_chain31,moe_decode_official_chain31
F3=${O},${O}_chain15,${O}_chain7,${O}_chain8
(timeout 85 $B/test_backend_ops --filter $F1 > $OUT/parity_slots1.txt 2>&1; echo "exit $?" >> $OUT/parity_slots1.txt) &
(timeout 85 $B/test_backend_ops --filter $F2 > $OUT/parity_slots2.txt 2>&1; echo "exit $?" >> $OUT/parity_slots2.txt) &
(timeout 85 $B/test_backend_ops --filter $F3 > $OUT/parity_default.txt 2>&1; echo "exit $?" >> $OUT/parity_default.txt) &
(timeout 85 $B/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
wait
for f in parity_slots1 parity_slots2 parity_default; do echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror|trap" $OUT/parity_*.txt | head -12
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "repacked-experts.*(bitwise|decode step)|FAIL|rror" $OUT/gpu_model.txt | head -8
