#!/usr/bin/env bash
# Session 49, call l49b (H200): W2's two accumulator sets (ACC2) with the rule refined after l49a:
# T = 2..4 only for W2 below W2P's row threshold (Flash; Pro's W2P already runs two chains), T = 1
# for NVFP4 (both shapes), H200 class. 1) parity of the moe_decode families and linear_decode_nvfp4
# (longer limit than l49a, whose 7 shards were cut at 130 s); test_gpu_model; 2) in-process A/B,
# never ("b" absent) against the rule ("ba"), T = 1, 2, 3, 4, 8 and T = 16 / 64 as controls (the
# rule takes one set there: the same kernels), two passes.
set -uo pipefail
nvidia-smi -L
N=l49b
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|moe_decode_official|moe_decode|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 210 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; grep -c Killed $L/parity_run.txt; grep "cases listed\|cases OK" $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | grep -v " 0 FAIL" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
E=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL $(( pass == 1 ? 150 : 575 - $(el) )) $G/bench_moe_linear --decode-ab --ab-official --ab $E,${E}ba --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,3,4,8,16,64 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-200
  save
done
echo "done t=$(el)"
