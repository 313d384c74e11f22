#!/usr/bin/env bash
# Session 44: parity of the landing tree (main + the SHF form of the 8-instruction E2M1 pair map, commit ac5c617):
# every moe_decode* case (repacked and checkpoint order), the device repack, linear_gemm_repacked; test_gpu_model;
# then one decode pass of bench_moe_linear (MXFP4 + NVFP4) as a check that the landing build is l44a's SHF figures.
# The prefill / linear_decode readers decode through the same decode_pairs at l44a's head: l44c, 204/204.
set -uo pipefail
nvidia-smi -L
N=l44e
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*|moe_repack|linear_gemm_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 330 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save
timeout -s KILL 70 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqayaka --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 12 --replay-gap-ms 80 > $L/bench.txt 2>&1
echo "== bench rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/bench.txt | cut -c1-110
save; echo "done t=$(el)"
