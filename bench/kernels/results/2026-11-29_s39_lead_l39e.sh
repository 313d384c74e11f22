#!/usr/bin/env bash
# Session 39 lead, call l39e (H200), tree e9d48ba: (1) the moe_decode* parity cases that l39d's 16-process run did not
# finish (five shards killed at its 200 s limit; SKIP = l39d's OK lines), in 4 processes; (2) back to back (the 700 W
# limit, no idle gap) the new default (qa: 4 scale slots at T = 2..4) against 8 slots at T = 2 / 3 / 4, Flash and Pro
# MXFP4, with the DSV4_MOE_TRACE build, whose block traces of both configurations (eager calls) come back raw.
set -uo pipefail
nvidia-smi -L
N=l39e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
P=/tmp/l39d_prev; rm -rf $P; mkdir -p $P; tar xzf bench/kernels/results/h200_2026-11-29_s39_l39d_logs.tgz -C $P
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases SKIP="$P/parity/pass1/*.txt $P/parity/pass2/*.txt" bash scripts/gpu_parity_all.sh 4 260 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; grep -E "listed|shards|cases passed|OK$" $L/parity_run.txt | tail -8; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
DSV4_MOE_TRACE_RAW=$L/raw.tsv timeout -s KILL 200 $G/bench_moe_linear_trace --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcy5,s0x4.2.4hwlpfgmcqay5 --shapes flash,pro --formats mxfp4 --tokens 2,3,4 --replays 100 > $L/sustained_trace.txt 2>&1
echo "== sustained rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/sustained_trace.txt | cut -c1-300; wc -l $L/raw.tsv
save; echo "done t=$(el)"
