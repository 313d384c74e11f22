#!/usr/bin/env bash
# Session 42's prepared call (NOT RUN: no device time was left): the ring round's bookkeeping patch
# (2026-11-29_s42_exp_round_bookkeeping.patch, branch wip-s42-bookkeeping add7aa2 + 2ad765a; SASS here: the T = 1 W1/W3
# and W2P round's common path 341 -> 313 instructions (317 + the E8M0 > 128 vote skipped by the uploader's flag), the T >= 5 two-round loops 770-786 -> 738-744). Build with the patch
# applied: bench_moe_linear; bench_moe_linear_old = main's binary without it. 1) main against the patched binary,
# default configuration, alternated twice: MXFP4 T = 1, 2, 4, 8, 16, 64, Flash and Pro; then NVFP4 T = 1, 4. 2) main's
# binary, Pro T = 1, row tiles forced (no code): since session 42 W2 fits 4 blocks per SM there (672 blocks at RT 2 on
# 528 slots: 1.27 waves) and W1/W3 4 (576 on 528): W2 at RT 4 (s-24: 336 blocks, one wave) or RT 1 (s-21), W1/W3 at RT 4
# (s-42: 288 blocks, 3 per SM, one wave) or RT 1 (s-12), each with the other kernel at RT 2 (the default's; a code of
# one digit would hand W2 to the wave model instead of the W2P rule), against the default. 3) block traces
# (bench_moe_linear_trace: main ac9111b built with -DDSV4_MOE_TRACE, the session-13 recipe) of the default at Flash /
# Pro T = 1 and 4, MXFP4: the W1/W3 and W2 phases since both kernels hold 4 blocks per SM at Pro T = 1. Parity of the
# patch: l43b. Pack bench_moe_linear_old (main), bench_moe_linear (patched), bench_moe_linear_trace (main, built by
# scripts/build_moe_trace_bench.sh BUILD_DIR OUT_DIR); three binaries: move tests/fixtures/text/deepseek_v4_tokenizer.json
# out of the tree for the call (64 MiB), then back.
set -uo pipefail
nvidia-smi -L
N=l43a
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
  save
done
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "rp official" $L/${b}_nv.txt | cut -c1-160
done
save
for pass in 1 2; do
  timeout -s KILL 100 $G/bench_moe_linear_old --decode-ab --ab-official --ab $D,s-24x4.2.4hwlpfgmcqayaka,s-21x4.2.4hwlpfgmcqayaka,s-42x4.2.4hwlpfgmcqayaka,s-12x4.2.4hwlpfgmcqayaka --shapes pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/rt_$pass.txt 2>&1
  echo "== forced row tiles pass $pass rc=$? t=$(el)"; grep -E "rp official|speed vs" $L/rt_$pass.txt | cut -c1-260
done
save
export DSV4_MOE_TRACE_RAW=$L/raw.tsv
timeout -s KILL 150 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace.txt 2>&1
echo "== trace rc=$? t=$(el)"; wc -l $L/raw.tsv; unset DSV4_MOE_TRACE_RAW
python3 scripts/moe_trace_raw.py $L/raw.tsv summary > $L/summary.txt 2>&1; grep "call 0" $L/summary.txt | cut -c1-220
python3 scripts/moe_trace_raw.py $L/raw.tsv rates > $L/rates.txt 2>&1; head -40 $L/rates.txt | cut -c1-200
save; echo "done t=$(el)"
