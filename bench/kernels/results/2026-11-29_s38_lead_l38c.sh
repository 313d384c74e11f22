#!/usr/bin/env bash
# Session 38 lead, call l38c (H200): W2 with two 16-row tiles per warp-round (W2P, bench config letter y).
# (1) parity of the *_w2p family (38 cases, 16 shards) and of moe_decode_official_repacked (the default path, same kernels
#     without W2P); (2) --decode-ab, official bf16 MXFP4, Flash / Pro, T = 1 / 4 / 16 / 64: the default against W2P at
#     every T with the model's row tiles and with W2's RT forced to 1 / 2 / 4, at the full clock (--replay-gap-ms 80),
#     then the default against W2P back to back (sustained, nvidia-smi sampled).
set -uo pipefail
nvidia-smi -L
N=l38c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*_w2p|moe_decode_official_repacked' BY=cases bash scripts/gpu_parity_all.sh 16 170 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
S=s0x4.2.4hwlpfgmc
timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y1,s-1x4.2.4hwlpfgmcy1,s-2x4.2.4hwlpfgmcy1,s-4x4.2.4hwlpfgmcy1 --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-250; save
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 50 > $L/smi_sustained.csv &
SMI=$!
timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab $S,${S}y1,$S,${S}y1 --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 40 > $L/sustained.txt 2>&1
echo "== sustained rc=$? t=$(el)"; kill $SMI; grep -E "hbm read-only kernel  4096|speed vs" $L/sustained.txt | cut -c1-250
save; echo "done t=$(el)"
