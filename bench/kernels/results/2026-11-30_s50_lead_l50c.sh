#!/usr/bin/env bash
# Session 50, l50c (H200): W2's early readiness read (chain 512, "o") and its h row before the
# ring's copies (1024, "r"), built with the default chain 1919 (383 | 512 | 1024) so that the
# default-chain parity cases and test_gpu_model run them. 1) parity of the moe_decode families and
# linear_decode_nvfp4; test_gpu_model; 2) in-process A/B: 383's configuration, + o, + o r at
# T = 1 / 2 / 4 / 16, both shapes and formats; 3) block traces (modes 0 and 2) with o r at T = 1.
set -uo pipefail
nvidia-smi -L
N=${N:-l50c}
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|moe_decode_official|moe_decode|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 210 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; grep -c Killed $L/parity_run.txt; grep "cases listed\|cases OK" $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | grep -v " 0 FAIL" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
D=s0x4.2.4hwlpfgmcqayakaba
timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}o,${D}or --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,4,16 --replays 10 --replay-gap-ms 80 > $L/ab_1.txt 2>&1
echo "== ab 1 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_1.txt | cut -c1-200; save
for m in 0 2; do
  export DSV4_MOE_TRACE_RAW=$L/raw_or_m$m.tsv DSV4_MOE_TRACE_MODE=$m
  timeout -s KILL 60 $G/bench_moe_linear_trace --decode-ab --ab-official --ab ${D}or --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 4 > $L/trace_or_m$m.txt 2>&1
  echo "== trace or mode $m rc=$? t=$(el)"
done
unset DSV4_MOE_TRACE_RAW DSV4_MOE_TRACE_MODE; save
echo "done t=$(el)"
