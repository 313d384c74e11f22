#!/usr/bin/env bash
# Session 43's prepared call (NOT RUN): the 8-instruction pair map (see l44a) on the other readers of the repacked
# layout, main's binaries (*_old) against the branch's: dense NVFP4 linears (bench_linear_gemm --decode-only, the
# repacked rows: linear_decode's decode_pairs_shift, the same code at dc0a596 and the head) and the W4A16 prefill
# (bench_moe_linear --prefill-quick --prefill-flash --prefill-t 4096: decode_pair / ws_weight_pair). Pack l44d with
# bench_linear_gemm_old, bench_linear_gemm, bench_moe_linear_old, bench_moe_linear.
set -uo pipefail
nvidia-smi -L
N=l44d
source scripts/device_call_prelude.sh
for b in bench_linear_gemm_old bench_linear_gemm; do
  timeout -s KILL 90 $G/$b --decode-only > $L/${b}_dec.txt 2>&1
  echo "== $b decode-only rc=$? t=$(el)"; grep -iE "read-only|repacked" $L/${b}_dec.txt | head -20 | cut -c1-160
done
save
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 120 $G/$b --prefill-quick --prefill-flash --prefill-t 4096 > $L/${b}_pf.txt 2>&1
  echo "== $b prefill rc=$? t=$(el)"; grep -iE "wgmma|TF" $L/${b}_pf.txt | head -12 | cut -c1-160
done
save; echo "done t=$(el)"
