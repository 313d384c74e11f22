#!/usr/bin/env bash
# Session 40 lead, call l40f (H200): chain 512 (the combine in W2's blocks, moe_decode_combine_fused.cuh; bench letter z)
# against the default at T = 1..16, Flash / Pro MXFP4, full clock; parity of its family (op names *_chain895*).
set -uo pipefail
nvidia-smi -L
N=l40f
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*_chain895.*' BY=cases bash scripts/gpu_parity_all.sh 8 150 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; head -2 $L/parity_run.txt; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
C=s0x4.2.4hwlpfgmcqayaz,s0x4.2.4hwlpfgmcqaya
timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4 --tokens 1,2,3,4,8,16 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; grep -E "rp official" $L/fullclock.txt | cut -c1-200; save
save; echo "done t=$(el)"
