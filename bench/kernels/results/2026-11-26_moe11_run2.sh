#!/bin/bash
# MOE11 run 2: chain 31 (7 + 8: no prepare launch at T = 1, + 16: W2 quantizes h itself) and 15
# (7 + 8) against 7 (MOE10, main's default) in the same process, 7 twice ("lwh" is the same
# mask); then in parallel: parity of the MOE11 chain cases (each bit-equal to chain 0), the default
# families under the new default 31 (+ the chain-7 cases), and test_gpu_model (source root linked).
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe11/bins.tar.xz -C $B || exit 1
mkdir -p /work/wt && ln -sfn $PWD /work/wt/moe11
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwl,s0x4.2.4hwlp,s0x4.2.4hwlpd,s0x4.2.4lwh --formats mxfp4 --tokens 1,4 --replays 30 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|launch floor|rp official|speed vs|rror|differ"
O=moe_decode_official_repacked
F=${O}_chain15,${O}_chain8,${O}_chain31,${O}_chain24,moe_decode_repacked_chain15,moe_decode_repacked_chain31,moe_decode_official_chain15,moe_decode_official_chain31
F=$F,${O}_rt2_chain15,${O}_rt8_chain15,${O}_rt2_chain31,${O}_rt8_chain31,${O}_xs_chain15,${O}_xs_chain31
(timeout 80 $B/test_backend_ops --filter $F > $OUT/parity_chain.txt 2>&1; echo "exit $?" >> $OUT/parity_chain.txt) &
(timeout 80 $B/test_backend_ops --filter ${O},moe_decode_repacked,${O}_chain7 > $OUT/parity_default.txt 2>&1; echo "exit $?" >> $OUT/parity_default.txt) &
(timeout 85 $B/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
wait
for f in parity_chain parity_default; do echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror" $OUT/parity_*.txt | head -8
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "repacked-experts|FAIL" $OUT/gpu_model.txt | head -8
