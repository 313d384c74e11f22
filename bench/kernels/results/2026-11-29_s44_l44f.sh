#!/usr/bin/env bash
# Session 44: the ring loops unrolled by the stage count (k_stages = 4: each unrolled round's stage a
# constant, ring and refill addresses immediates) plus the refill predicated on j < nr instead of
# branched around (branch wip-s44-unroll4, f72fdfc; SASS per round, common path: staged T = 1
# W1/W3 / W2P 270 -> 266, unstaged 290 -> 282-286). bench_moe_linear_old = main (cddf3eb),
# bench_moe_linear_pred = the predication alone (staged 270, unstaged 285.5), bench_moe_linear = the
# branch. 1) decode A/B, one pass, alternated; 2) parity of every moe_decode* case with the branch's
# test_backend_ops; 3) test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l44f
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
for b in bench_moe_linear_old bench_moe_linear_pred bench_moe_linear; do
  timeout -s KILL 50 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}_1.txt 2>&1
  echo "== $b rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_1.txt | cut -c1-110
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 100 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
