#!/usr/bin/env bash
# Session 42, call l42c (H200): the tree to land (the K parts' partial sums in the ring; W1/W3 alone on 4 scale slots at
# T = 1 where that adds a resident block past one wave, the default "ka"). 1) main's binary (bench_moe_linear_old,
# 0a09b64) against it, default configuration (the k letter is ignored by main's), T = 1..64 MXFP4 and T = 1 NVFP4, Flash
# and Pro, alternated; 2) parity, every moe_decode* case, 16 shards.
set -uo pipefail
nvidia-smi -L
N=l42c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
D=s0x4.2.4hwlpfgmcqayaka
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}.txt 2>&1
  echo "== $b rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}.txt | cut -c1-160
done
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "rp official" $L/${b}_nv.txt | cut -c1-160
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"
save; echo "done t=$(el)"
