#!/usr/bin/env bash
# Session 43's prepared call (NOT RUN: no device time left). The 8-instruction E2M1 pair map (branch wip-s43-decode8,
# patch 2026-11-29_s43_exp_decode8.patch): the repacked word's pairs P_0 = u & M, P_1 = rotl(u, 10) & M, P_2 = rotl(u,
# 13) & M, P_3 = ((u & 0x001B001B) * 0x1084) & M (a carry-free gather of three shifted copies) instead of session 25's
# 11-instruction map; every reader of the repacked layout decodes through moe_repack.h (MoE decode, the W4A16 prefill,
# dense NVFP4 linear_decode, linear_gemm's checkpoint_word_of; the device repack's bit map is derived from it).
# SASS: the T = 1 W1/W3 and W2P round's common path 318 -> 270 (LOP3 100 -> 84, IMAD.SHL 67 -> 3, SHF 16 -> 32, IMAD 6 ->
# 22): the integer-pipe ops stay 116 a round, the FMA pipe drops 48 (dc0a596, bench_moe_linear_shf). The branch's head
# (5a59396, patch 2026-11-29_s43_exp_decode8_wide.patch) issues the two rotations of the decode kernels' default
# expansion as IMAD.WIDE.U32 (an opaque multiplier: ptxas turns constant ones back into SHF): 272 SASS, integer-pipe
# ops 84 a round (bench_moe_linear). Pack: *_old = main's binaries, bench_moe_linear_shf = dc0a596's, the others the
# head's (scripts/device_pack.sh l44a ...). 1) decode A/B, alternated, two passes; 2) NVFP4 decode (~350 s). Dense
# NVFP4 linears and the W4A16 prefill: l44d. Session 43 left the packages built (.bin/l44a, l44b, l44d; ignored files,
# commit.txt 5a59396): l44a's 23.0 MB fits the 64 MiB tree only with tests/fixtures/text/deepseek_v4_tokenizer.json
# AND deepseek_v4_oracle.jsonl moved out for the call (then 65.3 MB); l44b / l44d with the tokenizer out.
set -uo pipefail
nvidia-smi -L
N=l44a
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear_shf bench_moe_linear; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-110
  done
  save
done
for b in bench_moe_linear_old bench_moe_linear_shf bench_moe_linear; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats nvfp4 --tokens 1,4,16 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "rp official" $L/${b}_nv.txt | cut -c1-110
done
save
echo "done t=$(el)"
