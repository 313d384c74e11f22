#!/usr/bin/env bash
# Session 42's prepared call (NOT RUN): parity of the ring round's bookkeeping patch (see l43a), every moe_decode* case
# in 16 shards (the f32-scale MXFP4 cases take the new copy-time conversion to E8M0 bytes; the flag's no-vote path every
# MXFP4 E8M0 case but the wide-scales ones), then test_gpu_model (the engine's uploader sets the flag). Pack
# the patched test_backend_ops and test_gpu_model (scripts/device_pack.sh l43b ...).
set -uo pipefail
nvidia-smi -L
N=l43b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
