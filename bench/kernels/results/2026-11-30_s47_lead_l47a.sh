#!/usr/bin/env bash
# Session 47, call l47a (H200): chain 512 (no prepare launch at T = 2..4: each GEMM warp derives
# its chunk from the routing; W1/W3 on raw bf16 x, its XRAW kernels). 1) parity of the new
# chain-895 cases and the chain families whose T = 1 self plan shares the changed chunk function;
# 2) decode A/B in one process, default (383) against 383 + 512 ("z"), MXFP4 / NVFP4, Flash / Pro,
# T = 2 / 3 / 4, two passes, full clock; 3) main's binary (65dcffa) against this tree's at the
# default configuration, T = 1 / 4 (every GEMM kernel's prologue changed), alternated.
set -uo pipefail
nvidia-smi -L
N=l47a
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*chain(895|8|15|31|383)' BY=cases bash scripts/gpu_parity_all.sh 16 150 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
E=s0x4.2.4hwlpfgmcqayaka
Z=s0x4.2.4hwlpfgmcqayakaz
for pass in 1 2; do
  timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$Z --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-200
done
grep -E "rp official" $L/ab_2.txt | cut -c1-120
save
for pass in 1 2; do
  for b in bench_moe_linear_main bench_moe_linear; do
    timeout -s KILL 90 $G/$b --decode-ab --ab-official --ab $E --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/mv_${b}_$pass.txt 2>&1
    echo "== $b $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/mv_${b}_$pass.txt | cut -c1-120
  done
done
save; echo "done t=$(el)"
