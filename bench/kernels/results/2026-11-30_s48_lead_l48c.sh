#!/usr/bin/env bash
# Session 48, call l48c (H200): W2 with two accumulator sets in every instantiation (no switch:
# l48b's switch broke the bit-identical outputs across chains and layouts that the parity and
# test_gpu_model check). 1) parity of the moe_decode families and linear_decode_nvfp4 /
# linear_decode_repacked; test_gpu_model; 2) main's binary (3450124) against this tree's, the
# default configuration, alternated: MXFP4 / NVFP4, Flash / Pro, T = 1, 2, 4, 8, 16 (then T = 1 / 4
# once more); 3) the dense NVFP4 decode linears (bench_linear_gemm --nvfp4-ring-ab: the
# linear_decode column is the unchanged kernel in the same process), main against this tree.
set -uo pipefail
nvidia-smi -L
N=l48c
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|moe_decode_official|linear_decode_nvfp4|linear_decode_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 110 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
echo "== test_gpu_model rc=$? t=$(el)"; grep -E "FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
E=s0x4.2.4hwlpfgmcqayaka
for b in bench_moe_linear_main bench_moe_linear; do
  timeout -s KILL 80 $G/$b --decode-ab --ab-official --ab $E --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,4,8,16 --replays 10 --replay-gap-ms 80 > $L/mv_${b}_1.txt 2>&1
  echo "== $b 1 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/mv_${b}_1.txt | cut -c1-120
done
save
for b in bench_linear_gemm_main bench_linear_gemm; do
  timeout -s KILL 70 $G/$b --nvfp4-ring-ab 1 1,2,4 > $L/ring_${b}.txt 2>&1
  echo "== $b rc=$? t=$(el)"; grep -E "ceiling|^nvfp4-ring" $L/ring_${b}.txt | cut -c1-260
done
save
for b in bench_moe_linear bench_moe_linear_main; do
  timeout -s KILL 50 $G/$b --decode-ab --ab-official --ab $E --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4 --replays 10 --replay-gap-ms 80 > $L/mv_${b}_2.txt 2>&1
  echo "== $b 2 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/mv_${b}_2.txt | cut -c1-120
done
save; echo "done t=$(el)"
