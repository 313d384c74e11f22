#!/usr/bin/env bash
# Session 47, call l47c (H200): chain 512 = W2's readiness wait polls with acquire loads (backoff
# capped at 128 ns): one L2 round trip fewer per W2 block whose h is ready when it polls. 1) parity:
# the new chain-895 cases (y bit for bit against chain 0) and the default / 383 / 31 families (the
# W2 SLOTS kernels changed); 2) decode A/B in one process, default (383) against 383 + 512 ("z"),
# MXFP4 Flash / Pro at T = 1 / 2 / 4 / 8, two passes, NVFP4 T = 1 / 4 one pass, full clock.
set -uo pipefail
nvidia-smi -L
N=l47c
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_rt[0-9]+|_xs)*(_chain(895|383|31))?' BY=cases bash scripts/gpu_parity_all.sh 16 150 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
E=s0x4.2.4hwlpfgmcqayaka
Z=s0x4.2.4hwlpfgmcqayakaz
for pass in 1 2; do
  timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$Z --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-200
  save
done
grep -E "rp official" $L/ab_2.txt | cut -c1-120
timeout -s KILL 80 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$Z --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/ab_nv.txt 2>&1
echo "== ab nv rc=$? t=$(el)"; grep -E "speed vs" $L/ab_nv.txt | cut -c1-200
save; echo "done t=$(el)"
