#!/usr/bin/env bash
# Session 38 lead, call l38a (H200): the FP8 decode path (W4A8 layout, official order, MXFP4).
# (1) parity of moe_repack_w4a8 and every moe_decode_official_w4a8* case (47, 16 shards);
# (2) bench_moe_linear --decode-ab --decode-w4a8: default config row, then W4A8 vs the BF16 path
#     (alternating, 2 passes) and their output check, Flash and Pro, T = 1 / 4 / 16 / 64, back to back
#     (sustained) and at the full clock (--replay-gap-ms 80); nvidia-smi clock / power sampled beside;
# (3) SASS of the engine-path GEMM kernels (RP 2 and 3, RT 2, SLOTS) for an instruction census.
set -uo pipefail
nvidia-smi -L
N=l38a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_repack_w4a8|moe_decode_official_w4a8.*' BY=cases bash scripts/gpu_parity_all.sh 16 150 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -4 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
S=s0x4.2.4hwlpfgmc
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 50 > $L/smi_sustained.csv &
SMI=$!
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $S --decode-w4a8 --w4a8-passes 3 --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 30 --replay-log $L/sus.replays > $L/sustained.txt 2>&1
echo "== sustained rc=$? t=$(el)"; kill $SMI
grep -E "hbm read-only kernel  4096|rp official|w4a8|check" $L/sustained.txt | cut -c1-200; save
timeout -s KILL 170 $G/bench_moe_linear --decode-ab --ab-official --ab $S --decode-w4a8 --w4a8-passes 2 --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|w4a8" $L/fullclock.txt | grep -v check | cut -c1-200; save
command -v cuobjdump >/dev/null && cuobjdump -sass $G/bench_moe_linear 2>/dev/null | awk '/Function : /{p = ($0 ~ /moe_decode_gemm_kernel/ && $0 ~ /Li2ELb1ELi[23]ELi0ELb1E/)} p' | gzip > $L/gemm_rt2_slots.sass.gz
ls -la $L; save; echo "done t=$(el)"
