#!/usr/bin/env bash
# Session 39 lead, call l39g (H200): the final tree (gemm_blocks_per_sm raises the dynamic shared memory limit before its
# occupancy query; W1/W3 with 4 scale slots at RT 4): the model's choice (s0...qa) against forced W1/W3 RT 4 (s-40...qa)
# and the old default (8 slots, s0 without q) at T = 1..4, Flash / Pro MXFP4, full clock; then test_gpu_model.
set -uo pipefail
nvidia-smi -L
N=l39g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcqay5,s-40x4.2.4hwlpfgmcqay5,s0x4.2.4hwlpfgmcy5
timeout -s KILL 150 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4 --tokens 1,2,3,4 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; save
timeout -s KILL 150 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
