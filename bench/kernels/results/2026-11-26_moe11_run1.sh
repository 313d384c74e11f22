#!/bin/bash
# MOE11 run 1: chain 8 (p: no prepare launch at T = 1) and 16 (k: the fold by clusters) against
# the default chain 7 (hwl) in the same process (hwl twice: "lwh" is the same mask); main's bench
# binary (wip/moe10 = main's MoE code) for the default; then parity of the new chain cases and
# the chain-7 cases (two processes in parallel, after the benches).
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
B=/tmp/b; mkdir -p $B && tar xJf .wt/moe11/bins.tar.xz -C $B || exit 1
nvidia-smi -L; cat $B/commit.txt
F=moe_decode_official_repacked_chain15,moe_decode_official_repacked_chain31,moe_decode_official_repacked_chain23,moe_decode_official_repacked_chain17
F=$F,moe_decode_repacked_chain31,moe_decode_official_chain31,moe_decode_official_repacked_rt2_chain31,moe_decode_official_repacked_rt8_chain31,moe_decode_official_repacked_xs_chain31
echo "== bench"
timeout 70 $B/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwl,s0x4.2.4hwlp,s0x4.2.4hwlk,s0x4.2.4hwlpk,s0x4.2.4lwh --formats mxfp4 --tokens 1,4 --replays 30 2>&1 \
  | tee $OUT/bench.txt | grep -E "read-only kernel  4096|launch floor|rp official|speed vs|rror|differ"
echo "== main binary"
timeout 30 $B/bench_moe_linear_main --decode-ab --ab-official --ab s0x4.2.4,s0x4.2.4hwl --formats mxfp4 --tokens 1,4 --replays 30 2>&1 \
  | tee $OUT/bench_main.txt | grep -E "read-only kernel  4096|launch floor|rp official|speed vs|rror|differ"
(timeout 75 $B/test_backend_ops --filter $F > $OUT/parity_new.txt 2>&1; echo "exit $?" >> $OUT/parity_new.txt) &
(timeout 75 $B/test_backend_ops --filter moe_decode_official_repacked_chain7,moe_decode_official_repacked_chain5,moe_decode_official_repacked_chain0,moe_decode_repacked_chain7 > $OUT/parity_chain7.txt 2>&1; echo "exit $?" >> $OUT/parity_chain7.txt) &
wait
for f in parity_new parity_chain7; do echo "== $f: $(grep -c ' OK' $OUT/$f.txt) OK, $(grep -c FAIL $OUT/$f.txt) FAIL; $(grep -E 'passed' $OUT/$f.txt) $(tail -1 $OUT/$f.txt)"; done
grep -E "FAIL|rror" $OUT/parity_*.txt | head -8
