#!/usr/bin/env bash
# Session 41, call l41a (H200): session 40's lead 1 (2026-11-29_s40_exp_w13tail.patch applied; its planned call l40j).
# Chain 1024 (bench letter n): at T = 1 (self plan, W2's staged h) W1/W3 blocks end with a release reduction on their
# slot's readiness counter (no fold count, no quantization) and W2 quantizes hf while staging it. 1) parity of its cases
# (*_chain1407, each against chain 0 bit for bit); 2) A/B at T = 1, n vs the default, full clock; 3) l40i's check: the
# default path of this binary against main's (435d24f, bench_moe_linear_old), alternated twice, T = 1 / 2 / 4 / 16.
set -uo pipefail
nvidia-smi -L
N=l41a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked.*_chain1407' BY=cases bash scripts/gpu_parity_all.sh 6 60 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -6 | cut -c1-300; save
timeout -s KILL 100 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqayan,s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/ab_n.txt 2>&1
echo "== ab_n rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs|rp official" $L/ab_n.txt | cut -c1-200; save
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear; do
    timeout -s KILL 110 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4 --tokens 1,2,4,16 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
  save
done
echo "done t=$(el)"
