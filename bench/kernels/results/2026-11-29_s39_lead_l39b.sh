#!/usr/bin/env bash
# Session 39 lead, call l39b (H200): block traces (DSV4_MOE_TRACE build of c7e1431 + the raw dump) of the official
# bf16 MXFP4 decode at T = 1 / 2 / 4, Flash and Pro, default config and W2P at every T: per-SM timelines of W1/W3,
# W2 and the combine (eager calls), to find where Flash T = 4 (71% of read) and T = 1 lose.
set -uo pipefail
nvidia-smi -L
N=l39b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/l39b; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l39b_logs.tgz -C $L . 2>/dev/null; }
export DSV4_MOE_TRACE_RAW=$L/raw.tsv
timeout -s KILL 300 $G/bench_moe_linear_trace --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcy5,s0x4.2.4hwlpfgmcy1 --shapes flash,pro --formats mxfp4 --tokens 1,2,4 --replays 6 > $L/trace.txt 2>&1
echo "== trace rc=$?"; grep -E "hbm read-only kernel  4096|speed vs|W1/W3 |W2 |combine " $L/trace.txt | grep -v "call [123]" | cut -c1-260 | head -80; wc -l $L/raw.tsv; save
