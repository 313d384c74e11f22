#!/bin/bash
# MOE10 run 3: the new default chain (7 = quantize in W1/W3 at one wave, one-warp plan at <= 8
# pairs, shorter load chains) against chain 0 (before MOE10) in the same process, the baseline
# twice; then, in parallel, parity of the chain cases (bit-equal to chain 0), the engine-path
# default families under the new default, and test_gpu_model (repacked-vs-checkpoint bit equality).
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe10/bins.tar.xz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
echo "== bench"
timeout 60 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4hwl,s0x4.2.4 --formats mxfp4 --replays 30 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|speed vs|rror"
F=moe_decode_official_repacked_chain5,moe_decode_official_repacked_chain1,moe_decode_official_repacked_chain4,moe_decode_official_repacked_chain2
F=$F,moe_decode_official_repacked_chain7,moe_decode_official_repacked_chain0,moe_decode_repacked_chain5,moe_decode_repacked_chain7,moe_decode_repacked_chain0
F=$F,moe_decode_official_chain5,moe_decode_official_repacked_rt2_chain5,moe_decode_official_repacked_rt8_chain5,moe_decode_official_repacked_xs_chain5
(timeout 105 $B/test_backend_ops --filter $F > $OUT/parity_chain.txt 2>&1; echo "exit $?" >> $OUT/parity_chain.txt) &
(timeout 105 $B/test_backend_ops --filter moe_decode_official_repacked,moe_decode_repacked > $OUT/parity_default.txt 2>&1; echo "exit $?" >> $OUT/parity_default.txt) &
(timeout 110 $B/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
wait
for f in parity_chain parity_default; do echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep FAIL $OUT/parity_*.txt | head -5
echo "== gpu_model: $(grep -E 'passed, [0-9]+ failed' $OUT/gpu_model.txt | tail -1); $(tail -1 $OUT/gpu_model.txt)"
grep -E "repacked-experts|FAIL" $OUT/gpu_model.txt | head -12
