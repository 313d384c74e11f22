#!/usr/bin/env bash
# Session 37 lead, call l37f (H200): pick_rt's tie rule for the bandwidth-rich class (Pro T = 1's W2 at RT 2).
# (1) --decode-ab at the full clock (--replay-gap-ms 80): the model (s0) against the old choice forced (s-24: W1/W3 RT 2,
# W2 RT 4) and s-22, official bf16 MXFP4 and NVFP4, Flash and Pro, T = 1 and 4; (2) parity of every moe_decode* case
# (335, 16 round-robin shards); (3) test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l37f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
S=x4.2.4hwlpfgmc
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab s0$S,s-24$S,s-22$S --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4 --replays 15 --replay-gap-ms 80 --replay-log $L/ab.replays > $L/ab.txt 2>&1
echo "== ab rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/ab.txt | cut -c1-200; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 260 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -6 $L/parity_run.txt; save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
