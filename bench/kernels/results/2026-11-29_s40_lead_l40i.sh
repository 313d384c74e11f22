#!/usr/bin/env bash
# Session 40 lead, call l40i (H200): does chain 512's code (off by default) cost the default path? main's bench binary
# before it (3f02eba, CI's build) against this tree's (39f9df6+), the default config, alternated twice on one machine.
set -uo pipefail
nvidia-smi -L
N=l40i
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
for pass in 1 2; do
  for b in bench_moe_linear_old bench_moe_linear; do
    timeout -s KILL 100 $G/$b --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqaya --shapes flash,pro --formats mxfp4 --tokens 1,4,16 --replays 12 --replay-gap-ms 80 > $L/${b}_$pass.txt 2>&1
    echo "== $b pass $pass rc=$?"; grep -E "hbm read-only kernel  4096|rp official" $L/${b}_$pass.txt | cut -c1-160
  done
done
save; echo done
