#!/usr/bin/env bash
# Session 49, call l49a (H200; prepared in session 48): the device call that would verify branch wip/s48-acc2-template
# (patch 2026-11-30_s48_wip_acc2_template.patch against c404400): W2's two accumulator sets as a
# template parameter (ACC2) on every MoE W2 kernel, one choice per call (moe_decode_w2_two_sets:
# T = 2..4, and T = 1 for NVFP4, H200 class; "bN" / "ba" in the bench's configurations).
# 1) parity (chains vs chain 0 bit for bit, layouts, W2P); test_gpu_model (repacked vs checkpoint);
# 2) in-process A/B: never ("b" absent) / the rule ("ba") / every T ("b1"), two passes.
set -uo pipefail
nvidia-smi -L
N=l49a
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|moe_decode_official|moe_decode|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 130 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
E=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL $(( pass == 1 ? 200 : 560 - $(el) )) $G/bench_moe_linear --decode-ab --ab-official --ab $E,${E}ba,${E}b1 --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,3,4,8 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-200
  save
done
echo "done t=$(el)"
