#!/usr/bin/env bash
# Session 39 lead, call l39h (H200): the last code commit (the 4-slot W1/W3 row-tile rule limited to T = 2..4, host
# code only): the model's choice against forced W1/W3 RT 4 with 4 slots at T = 2..4 (expected the same launches),
# Flash / Pro MXFP4, full clock; then test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l39h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 60 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqay5,s-40x4.2.4hwlpfgmcqay5 --shapes flash,pro --formats mxfp4 --tokens 2,3,4 --replays 8 --replay-gap-ms 40 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; save
timeout -s KILL 90 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
