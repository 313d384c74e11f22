#!/usr/bin/env bash
# Session 43's prepared call (NOT RUN): parity of the 8-instruction pair map (see l44a), part 2 of 2: dense NVFP4
# linear_decode on repacked weights (96 cases) and the W4A16 prefill on repacked weights (moe_prefill*repacked*, 108),
# by cases in 16 shards. Reuses l44b's package (test_backend_ops): N=l44b for the unpack.
set -uo pipefail
nvidia-smi -L
N=l44b
source scripts/device_call_prelude.sh
L=/tmp/l44c; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l44c_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='linear_decode_repacked|moe_prefill.*repacked.*' BY=cases bash scripts/gpu_parity_all.sh 16 420 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
echo "done t=$(el)"
