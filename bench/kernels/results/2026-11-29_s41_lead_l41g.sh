#!/usr/bin/env bash
# Session 41, call l41g (H200), NOT RUN (no device time left): apply 2026-11-29_s41_exp_partial_alias.patch (git apply)
# and build test_backend_ops + bench_moe_linear first; bench_moe_linear_old = main's binary without it. The patch keeps
# the K parts' partial sums in each warp's own ring stage 0 (2 KB less static shared memory for the RT 2 kernels): W2
# at T = 1 then fits 4 blocks per SM (57.5 KB a block) and, with 4 scale slots (q1), so does Pro's W1/W3 (56.1 KB);
# pick_rt's occupancy inputs change with it at other T. 1) parity, every moe_decode* case (the sums and their order are
# the same: bit for bit by construction); 2) main's binary against the patched one, default config, alternated twice,
# T = 1..64; 3) the patched binary, q1 against the default at T = 1. Carry: move tests/fixtures/text/
# deepseek_v4_tokenizer.json out of the tree for the call (three binaries), then back.
set -uo pipefail
nvidia-smi -L
N=l41g
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
timeout -s KILL 80 $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya,s0x4.2.4hwlpfgmcq1ya --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1 --replays 12 --replay-gap-ms 80 > $L/ab_q1.txt 2>&1
echo "== q1 rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/ab_q1.txt | cut -c1-200; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 300 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"
save; echo "done t=$(el)"
