#!/usr/bin/env bash
# Session 47, call l47b (H200): chain 512 = the combine folded into W2 (the W2 block that completes
# a token's row block sums it into y; no combine launch; every per-stream counter reset by its
# last user). 1) parity of every moe_decode_official_repacked op (the SLOTS kernels changed; the
# new chain-895 cases compare y bit for bit with chain 0) and linear_decode_nvfp4 (chain_args
# grew); 2) decode A/B in one process, default (383) against 383 + 512 ("z"), MXFP4 Flash / Pro
# at T = 1 / 2 / 3 / 4 / 8 / 16 and NVFP4 at T = 1 / 4, two passes, full clock.
set -uo pipefail
nvidia-smi -L
N=l47b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*|linear_decode_nvfp4.*' BY=cases bash scripts/gpu_parity_all.sh 16 240 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
E=s0x4.2.4hwlpfgmcqayaka
Z=s0x4.2.4hwlpfgmcqayakaz
for pass in 1 2; do
  timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$Z --shapes flash,pro --formats mxfp4 --tokens 1,2,3,4,8,16 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-200
  save
done
grep -E "rp official" $L/ab_2.txt | cut -c1-120
timeout -s KILL 100 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$Z --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/ab_nv.txt 2>&1
echo "== ab nv rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/ab_nv.txt | cut -c1-200
save; echo "done t=$(el)"
