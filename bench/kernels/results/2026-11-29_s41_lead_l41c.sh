#!/usr/bin/env bash
# Session 41, call l41c (H200): W1/W3 requests its staged activation rows before the weights' first ring rounds (chain
# 8's bf16 x into registers, the other staged rows as one cp.async group older than the ring's), from l41b's profile
# (17.5% / 12.7% of the T = 1 W1/W3 stall samples on the first use of x). 1) parity: every moe_decode* case, 16 shards;
# 2) this tree's bench (bench_moe_linear) against main's (bench_moe_linear_old, 435d24f), default config, alternated
# twice, full clock: MXFP4 T = 1, 2, 4, 8, 16, 64 Flash / Pro, then NVFP4 T = 1, 4.
set -uo pipefail
nvidia-smi -L
N=l41c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear; do
    timeout -s KILL 120 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
  save
done
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_nv.txt | cut -c1-160
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 240 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300
save; echo "done t=$(el)"
