#!/usr/bin/env bash
# Session 41, call l41e (H200): W2 loads a staged h row's groups before storing any (this tree, bench_moe_linear)
# against the x-prefetch commit alone (15c599f, bench_moe_linear_x), default config, alternated twice, full clock,
# MXFP4 T = 1 / 2 / 4, NVFP4 T = 1; then parity of every moe_decode* case (16 shards; what the limit cuts is reported).
set -uo pipefail
nvidia-smi -L
N=l41e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for pass in 1 2; do
  for b in bench_moe_linear_x bench_moe_linear; do
    timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4 --tokens 1,2,4 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
  save
done
for b in bench_moe_linear_x bench_moe_linear; do
  timeout -s KILL 40 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_nv.txt | cut -c1-160
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"
save; echo "done t=$(el)"
