#!/usr/bin/env bash
# Session 40 lead, call l40j (H200), NOT RUN (no device time left): apply 2026-11-29_s40_exp_w13tail.patch (git apply)
# and build test_backend_ops + bench_moe_linear first. Experiment chain 1024 (bench letter n): W1/W3 blocks end with a
# release reduction on the slot's readiness counter (no fold count, no quantization), W2 waits for all of them and
# quantizes hf while staging it (T = 1, self plan). Parity of its cases (*_chain1407, each against chain 0 bit for bit),
# then the A/B at T = 1 (Flash / Pro, MXFP4 / NVFP4), full clock.
set -uo pipefail
nvidia-smi -L
N=l40j
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*_chain1407' BY=cases bash scripts/gpu_parity_all.sh 6 60 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -6 | cut -c1-300; save
timeout -s KILL 90 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqayan,s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/fullclock.txt | cut -c1-200; save
echo "done t=$(el)"
