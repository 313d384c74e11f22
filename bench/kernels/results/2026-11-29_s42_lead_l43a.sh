#!/usr/bin/env bash
# Session 42's prepared call (NOT RUN: no device time was left): the ring round's bookkeeping patch
# (2026-11-29_s42_exp_round_bookkeeping.patch, branch wip-s42-bookkeeping add7aa2; SASS here: the T = 1 W1/W3 and W2P
# round's common path 341 -> 317 instructions, the T >= 5 two-round loops 770-786 -> 738-744). Build with the patch
# applied: bench_moe_linear + test_backend_ops; bench_moe_linear_old = main's binary without it. 1) main against the
# patched binary, default configuration, alternated twice: MXFP4 T = 1, 2, 4, 8, 16, 64, Flash and Pro; then NVFP4 T = 1, 4;
# 2) parity: every moe_decode* case (the f32-scale cases take the new copy-time conversion; every other value read is
# the same, the same sums in the same order: bit for bit by construction). Three binaries: move
# tests/fixtures/text/deepseek_v4_tokenizer.json out of the tree for the call, then back.
set -uo pipefail
nvidia-smi -L
N=l43a
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16,64 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
  save
done
for b in bench_moe_linear_old bench_moe_linear; do
  timeout -s KILL 60 $G/$b --decode-ab --ab-official --ab $D --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/${b}_nv.txt 2>&1
  echo "== $b nvfp4 rc=$? t=$(el)"; grep -E "rp official" $L/${b}_nv.txt | cut -c1-160
done
save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 240 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"
save; echo "done t=$(el)"
