#!/usr/bin/env bash
# Session 47, call l47f (H200): the W1/W3 row-tile rule with 4 scale slots at T = 2..4 now takes
# RT 2 where the RT 4 grid fits one wave of resident blocks on the H200 class (Flash T = 2; l47e:
# forced RT 2 1.030-1.034x there). Host code only (kernels SASS-identical to 461f242's).
# 1) parity of the default / 383 / 31 moe_decode_official_repacked families (T = 2 cases run RT 2
# now); 2) the new rule against W1/W3 forced to RT 4 ("s-40": the rule before), Flash / Pro,
# MXFP4 / NVFP4, T = 2 / 3 / 4, one pass, full clock.
set -uo pipefail
nvidia-smi -L
N=l47f
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(383|31))?' BY=cases bash scripts/gpu_parity_all.sh 16 100 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -1 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
D=s0x4.2.4hwlpfgmcqayaka
F=s-40x4.2.4hwlpfgmcqayaka
timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab $D,$F --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_1.txt 2>&1
echo "== ab rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/ab_1.txt | cut -c1-200
save; echo "done t=$(el)"
