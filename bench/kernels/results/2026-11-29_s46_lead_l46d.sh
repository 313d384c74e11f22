#!/usr/bin/env bash
# Session 46, call l46d (H200): W2P on the 4 scale slots (new instantiations; branch
# s46-w2p-slots4): where moe_decode_set_w2_pair_from asks for W2P at T = 2..4 the W2 launch now
# takes it with the 4 slots instead of ignoring it (l46c's no-op). 1) parity of the W2P ops (the
# cases force W2P from T = 1, so their T = 3 / 4 rows now run the new kernels); 2) decode A/B,
# default ("ya": no W2P at T = 2..4) against "y2", MXFP4 / NVFP4, Flash / Pro, T = 2 / 3 / 4,
# two passes, full clock.
set -uo pipefail
nvidia-smi -L
N=l46d
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*_w2p' BY=cases bash scripts/gpu_parity_all.sh 16 150 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
D=s0x4.2.4hwlpfgmcqayaka
E=s0x4.2.4hwlpfgmcqay2ka
for pass in 1 2; do
  timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $D,$E --shapes flash,pro --formats mxfp4,nvfp4 --tokens 2,3,4 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-180
done
save; echo "done t=$(el)"
