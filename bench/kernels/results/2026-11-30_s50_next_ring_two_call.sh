#!/usr/bin/env bash
# Prepared in session 50, NOT run: the verification call of branch wip/s50-ring-depth (the weight
# ring 2 rounds deep at T >= 16 on the H200 class as a per-call choice: template parameter NS of
# the decode GEMM kernel, moe_decode_ring_two's rule; bench letter "e"; 91ba5e3, whose speed l50f
# measured in one process: T = 16 / 32 / 64 1.007-1.033x, Pro NVFP4 T = 16 0.996x). Binaries from that branch:
# bench_moe_linear, test_backend_ops, test_gpu_model, packed as N. Before packing, check
# `cuobjdump -res-usage` of the NS = 2 instantiations (static shared memory 16 KB lower for NM = 2,
# registers as the NS = 4 twins) and that every NS = 4 kernel's SASS is unchanged from main.
# 1) parity of the moe_decode families (their Flash / Pro T = 16 / 64 repacked cases and the small
# T = 20 / 64 ones run NS = 2 under the default rule) and linear_decode_nvfp4; test_gpu_model;
# 2) in-process A/B, never ("e" absent) against the rule ("ea"), T = 4 (control) / 8 / 16 / 32 /
# 64, both shapes and formats, two passes. Land only if T = 16 / 64 gain on both passes and T = 8
# is not worse (else: the rule from T = 32, or for MXFP4 only; Pro NVFP4 T = 16 measured 0.994x).
set -uo pipefail
nvidia-smi -L
N=${N:-l51a}
source scripts/device_call_prelude.sh
source scripts/device_moe_decode_checks.sh
moe_decode_checks
D=s0x4.2.4hwlpfgmcqayakaba
for pass in 1 2; do
  timeout -s KILL $(( pass == 1 ? 150 : 570 - $(el) )) $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}ea --shapes flash,pro --formats mxfp4,nvfp4 --tokens 4,8,16,32,64 --replays 10 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | sed "s/$D/D/g" | cut -c1-120
  save
done
echo "done t=$(el)"
