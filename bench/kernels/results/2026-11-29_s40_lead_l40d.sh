#!/usr/bin/env bash
# Session 40 lead, call l40d (H200): W2P at T = 1 with W2 at RT 2 as the default on the H200 class ("ya", session 40's
# moe_decode_w2_pair rule) against the old default (W2P from T = 5, "y5") at T = 1 (T = 2 / 5: controls, the same launches),
# MXFP4 and NVFP4, full clock; parity of every moe_decode* case (T = 1 now runs W2P at RT 2 by default on this device);
# (test_gpu_model: call l40e).
set -uo pipefail
nvidia-smi -L
N=l40d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcqaya,s0x4.2.4hwlpfgmcqay5
timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,5 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 200 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
# test_gpu_model: l40e (the working tree limit takes two of the three binaries per call).
save; echo "done t=$(el)"
