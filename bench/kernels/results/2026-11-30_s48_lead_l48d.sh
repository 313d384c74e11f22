#!/usr/bin/env bash
# Session 48, call l48d (H200): l48b / l48c's test_gpu_model failed its exact-precision
# "repacked vs checkpoint experts" comparison (11-12 bitwise-differing steps), though exact mode
# runs no kernel that l48b changed. main's test_gpu_model (3450124) and this tree's, alternated,
# --only-repacked, twice each: is the comparison deterministic on main?
set -uo pipefail
nvidia-smi -L
N=l48d
source scripts/device_call_prelude.sh
for pass in 1 2; do
  for b in test_gpu_model_main test_gpu_model; do
    timeout -s KILL 60 $G/$b --only-repacked > $L/${b}_$pass.txt 2>&1
    echo "== $b $pass rc=$? t=$(el)"; grep -E "bitwise|passed" $L/${b}_$pass.txt | cut -c1-230
  done
  save
done
echo "done t=$(el)"
