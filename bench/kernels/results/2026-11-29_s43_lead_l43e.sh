#!/usr/bin/env bash
# Session 43, call l43e (H200): the W1/W3 short-second-wave rule (pick_rt: T = 1, H200 class, RT 2 grid over one wave
# and <= 1.25 waves -> RT 1; Pro MXFP4 T = 1 only among the model shapes). 1) Parity of every moe_decode* case (16
# shards) with the rule's test_backend_ops. 2) bench_moe_linear default (the rule) against s-22 (the choice before it),
# Pro T = 1 MXFP4 and NVFP4, Flash T = 1 MXFP4 as a control, two passes.
set -uo pipefail
nvidia-smi -L
N=l43e
source scripts/device_call_prelude.sh
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 60 $G/bench_moe_linear --decode-ab --ab-official --ab $D,s-22x4.2.4hwlpfgmcqayaka --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== A/B pass $pass rc=$? t=$(el)"; grep -E "rp official|speed vs" $L/ab_$pass.txt | cut -c1-200
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save; echo "done t=$(el)"
