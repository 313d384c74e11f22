#!/usr/bin/env bash
# Session 40 lead, call l40h (H200): block traces (trace build of l40g's tree, DSV4_MOE_TRACE_RAW) of chain 512 (the
# combine in W2's blocks, z) and the default at Flash / Pro T = 1 and 4, MXFP4: where the fused combine loses 1.03-1.13x.
set -uo pipefail
nvidia-smi -L
N=l40h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
export DSV4_MOE_TRACE_RAW=$L/raw.tsv
timeout -s KILL 200 $G/bench_moe_linear_trace --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqayaz,s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace.txt 2>&1
echo "== trace rc=$?"; grep -E "hbm read-only kernel  4096|speed vs" $L/trace.txt | cut -c1-260; wc -l $L/raw.tsv; save
python3 scripts/moe_trace_raw.py $L/raw.tsv summary > $L/summary.txt 2>&1; grep "call 0" $L/summary.txt | cut -c1-220
save; echo done
