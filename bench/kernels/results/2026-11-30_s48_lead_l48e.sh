#!/usr/bin/env bash
# Session 48, call l48e (H200): the checkpoint layout's GEMMs take the row tiles of their repacked
# twin (launch_gemm's rt_force; host code, every kernel SASS-identical to main 3450124). l48d: main
# fails test_gpu_model's exact-precision repacked-vs-checkpoint comparison (11 bitwise-differing
# steps) since session 47's one-wave RT 2 rule for the repacked W1/W3 at Flash T = 2.
# 1) test_gpu_model (all); 2) parity of the checkpoint-layout and repacked moe_decode families.
set -uo pipefail
nvidia-smi -L
N=l48e
source scripts/device_call_prelude.sh
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode|moe_decode_official|moe_decode_official_repacked|moe_decode_repacked|moe_decode_official_chain(5|15|31)' BY=cases bash scripts/gpu_parity_all.sh 16 75 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; grep -c Killed $L/parity_run.txt; save; echo "done t=$(el)"
