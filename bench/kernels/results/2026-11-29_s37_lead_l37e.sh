#!/usr/bin/env bash
# Session 37 lead, call l37e (H200): the routed-MoE decode's row tiles (pick_rt) against forced ones, timed at the full
# SM clock: --replay-gap-ms 80 (every replay after 80 ms of idle: no power-cap event, pass-to-pass spread ~0.3% in l37d)
# instead of back to back (power-capped, spread of several %: session 33's row-position effects). Official bf16 MXFP4,
# Flash and Pro, T = 1 / 4 / 16 / 64; configurations: the model (s0...) and W1/W3 RT u, W2 RT d forced (s-<ud>...).
set -uo pipefail
nvidia-smi -L
N=l37e
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l37d/l37d.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 -lms 50 > $L/clocks.csv 2>&1 &
SMI=$!
S=x4.2.4hwlpfgmc
timeout -s KILL 400 $G/bench_moe_linear --decode-ab --ab-official --ab s0$S,s-44$S,s-42$S,s-24$S,s-22$S,s-41$S,s-14$S --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 15 --replay-gap-ms 80 --replay-log $L/rt.replays > $L/rt.txt 2>&1
echo "== rt rc=$? t=$(el)"; save
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
grep -E "hbm read-only kernel  4096|rp official|speed vs" $L/rt.txt | cut -c1-200
awk -F', ' '{print $2}' $L/clocks.csv | sort | uniq -c | sort -rn | head -6
awk -F', ' '{print $NF}' $L/clocks.csv | sort | uniq -c
save; echo "done t=$(el)"
