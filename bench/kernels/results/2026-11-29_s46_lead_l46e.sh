#!/usr/bin/env bash
# Session 46, call l46e (H200): the final tree of s46-w2p-slots4 (W2P on the 4 scale slots by
# default at T = 2..4 for W2 of >= 7168 rows): 1) parity of every moe_decode_official_repacked op
# (230 cases); 2) decode A/B, the new default ("ya") against the previous one at T = 2..4 ("y5":
# W2P from T = 5), MXFP4 / NVFP4, Flash / Pro, T = 2 / 3 / 4, two passes, full clock.
set -uo pipefail
nvidia-smi -L
N=l46e
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*' BY=cases bash scripts/gpu_parity_all.sh 16 200 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
D=s0x4.2.4hwlpfgmcqay5ka
E=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $D,$E --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-180
done
grep -E "rp official" $L/ab_2.txt | cut -c1-120
save; echo "done t=$(el)"
