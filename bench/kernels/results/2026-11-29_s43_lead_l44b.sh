#!/usr/bin/env bash
# Session 43's prepared call (NOT RUN): parity of the 8-instruction pair map (see l44a), part 1 of 2: the MoE decode
# ops on repacked weights (298 cases), the device repack (moe_repack, 2) and linear_gemm_repacked (4), by cases in 16
# shards; then test_gpu_model (the engine repacks its experts and dense NVFP4 matrices at load). Part 2: l44c. Pack the
# branch's test_backend_ops and test_gpu_model (scripts/device_pack.sh l44b ...; move the tokenizer fixture out).
set -uo pipefail
nvidia-smi -L
N=l44b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*repacked.*|moe_repack|linear_gemm_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 360 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
