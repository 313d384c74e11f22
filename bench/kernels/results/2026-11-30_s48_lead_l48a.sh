#!/usr/bin/env bash
# Session 48, call l48a (H200): two accumulator sets in the decode GEMM's round (each word's
# second HMMA into a second set: two dependent HMMA chains per matrix instead of one; session 15's
# MOE20 measured 1.01-1.02x at T <= 4 on the loop of then). Binaries from one tree, built with
# DSV4_MOE_ACC2_MASK = 0 (m0: SASS-identical to main 3450124), 3 (m3: every ring kernel) and 1
# (m1: W1/W3 only). 1) parity of m3 (moe_decode families and linear_decode_nvfp4);
# 2) m0 / m3 / m1 alternated, the default configuration, MXFP4 Flash / Pro T = 1..64, two passes;
# 3) NVFP4 T = 1 / 4, m0 / m3.
set -uo pipefail
nvidia-smi -L
N=l48a
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops_m3 OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_repacked|moe_decode_official|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
E=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  for b in m0 m3 m1; do
    timeout -s KILL 70 $G/bench_$b --decode-ab --ab-official --ab $E --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/mv_${b}_$pass.txt 2>&1
    echo "== $b $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/mv_${b}_$pass.txt | cut -c1-120
  done
  save
done
for b in m0 m3; do
  timeout -s KILL 50 $G/bench_$b --decode-ab --ab-official --ab $E --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/nv_${b}.txt 2>&1
  echo "== nv $b rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/nv_${b}.txt | cut -c1-120
done
save; echo "done t=$(el)"
