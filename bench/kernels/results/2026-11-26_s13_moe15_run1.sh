#!/usr/bin/env bash
# MOE15 device call 1 (binaries built on the build machine, carried in .wt/moe15/bins.tar.xz):
# the short-read ceiling and the stage breakdown beside the decode A/B (chain 127 = default,
# d = W2 ring 8 deep, e = W1/W3 ring 5 deep, de both, 127 again as control), then the
# %globaltimer trace (diagnostic build), then parity of the new chain cases.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe15/bins.tar.xz /tmp/b
nvidia-smi -L
D=s0x4.2.4hwlpfgm
timeout 75 /tmp/b/bench_kernels/bench_moe_linear --decode-ab --ab-official --ab $D,${D}d,${D}e,$D,${D}de \
  --formats mxfp4 --tokens 1,4 --replays 15 --short-read --breakdown >$OUT/bench.txt 2>&1
echo "bench exit $?"
grep -E "read-only|launch floor|speed vs|short-read .*(one launch|pair|triple|moe_decode)|^breakdown|stage" $OUT/bench.txt | cut -c1-230
timeout 35 /tmp/b/trace/bench_moe_linear_trace --decode-ab --ab-official --ab $D,${D}de --formats mxfp4 \
  --tokens 1,4 --replays 5 >$OUT/trace.txt 2>&1
echo "trace exit $?"
grep -E "^trace|^  (W1|W2|comb)" $OUT/trace.txt | awk '/^trace/{p=(/call 2:/ && /T=1 /)} p' | cut -c1-260
F=moe_decode_official_repacked_chain383,moe_decode_official_repacked_chain639,moe_decode_official_repacked_chain895
timeout 60 /tmp/b/test_backend_ops --filter $F >$OUT/parity1.txt 2>&1 &
timeout 60 /tmp/b/test_backend_ops --filter moe_decode_official_repacked_rt8_chain895,moe_decode_official_repacked_xs_chain895,moe_decode_official_repacked_chain127 >$OUT/parity2.txt 2>&1 &
wait
for f in $OUT/parity1.txt $OUT/parity2.txt; do echo "== $f"; grep -E "FAIL|passed|failed" $f | tail -4; done
