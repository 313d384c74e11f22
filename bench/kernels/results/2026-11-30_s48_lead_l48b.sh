#!/usr/bin/env bash
# Session 48, call l48b (H200): W2 with two accumulator sets as a switch (the kernel's ACC2, chain
# 16's W2 kernels only; "bN" from T = N, without b never; the provisional default rule: T >= 2).
# 1) parity of the moe_decode families and linear_decode_nvfp4 (the default rule: ACC2 at T >= 2);
# test_gpu_model; 2) A/B in one process: default configuration with b off ("E") against "E" + b1
# (W2 ACC2 at every T), Flash / Pro, MXFP4 / NVFP4, T = 1, 2, 3, 4, 8, 16, 64, full clock.
set -uo pipefail
nvidia-smi -L
N=l48b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 150 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; tail -3 $L/test_gpu_model.txt; save
E=s0x4.2.4hwlpfgmcqayaka
B=s0x4.2.4hwlpfgmcqayakab1
timeout -s KILL 280 $G/bench_moe_linear --decode-ab --ab-official --ab $E,$B --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,3,4,8,16,64 --replays 10 --replay-gap-ms 80 > $L/ab_1.txt 2>&1
echo "== ab 1 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_1.txt | cut -c1-200
save; echo "done t=$(el)"
