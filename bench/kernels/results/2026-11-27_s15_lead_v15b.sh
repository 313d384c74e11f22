#!/usr/bin/env bash
# Session 15 lead: main's figures on an H200 (same binaries as v15a): MoE decode, attention focus + records.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p build-gpu && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$PREBUILT" build-gpu
B=build-gpu/bench_kernels
timeout 100 $B/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 > $OUT/bench_decode.txt 2>&1; echo "decode exit $?"
grep -E "read-only kernel  4096|rp official" $OUT/bench_decode.txt | head -12
timeout 90 $B/bench_attention --focus > $OUT/bench_attn_focus.txt 2>&1; echo "attn exit $?"
grep -E "ceiling|plan" $OUT/bench_attn_focus.txt | head -30
timeout 90 $B/bench_attention --kv-fp8 > $OUT/bench_attn_kvfp8.txt 2>&1; echo "kvfp8 exit $?"
tail -30 $OUT/bench_attn_kvfp8.txt
