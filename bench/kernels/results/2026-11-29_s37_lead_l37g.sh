#!/usr/bin/env bash
# Session 37 lead, call l37g (H200, main 825b75e's bench_moe_linear): does a cheaper-energy E2M1 expansion win once the
# card sits at its power limit? The two expansions of the decode ("r": decode_pairs, rotations on the integer ALU pipe;
# "s", the default: decode_pairs_shift, 4 of 5 rotations as IMAD shifts on the FMA pipe; the same pairs bit for bit)
# timed (1) at the full clock (--replay-gap-ms 80, 15 replays) and (2) back to back (120 replays, power-capped), official
# bf16 MXFP4, Flash T = 16 / 64 and Pro T = 4 / 16, alternating passes; clocks sampled as in l37d.
set -uo pipefail
nvidia-smi -L
N=l37g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 -lms 50 > $L/clocks.csv 2>&1 &
SMI=$!
S=0x4.2.4hwlpfgmc
for sh in "flash 16,64" "pro 4,16"; do set -- $sh
  timeout -s KILL 100 $G/bench_moe_linear --decode-ab --ab-official --ab s$S,r$S --shapes $1 --formats mxfp4 --tokens $2 --replays 15 --replay-gap-ms 80 --replay-log $L/gap_$1.replays > $L/gap_$1.txt 2>&1; echo "== gap $1 rc=$? t=$(el)"
  timeout -s KILL 120 $G/bench_moe_linear --decode-ab --ab-official --ab s$S,r$S --shapes $1 --formats mxfp4 --tokens $2 --replays 120 --replay-log $L/sus_$1.replays > $L/sus_$1.txt 2>&1; echo "== sustained $1 rc=$? t=$(el)"
  save
done
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
for f in $L/gap_*.txt $L/sus_*.txt; do echo "== $(basename $f)"; grep -E "hbm read-only kernel  4096|rp official|speed vs" $f | cut -c1-160; done
python3 - $L <<'PY'
import sys, glob, os, bisect, statistics as st, datetime
L = sys.argv[1]
samples = []
for line in open(f"{L}/clocks.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        samples.append((t, float(p[1].split()[0]), float(p[3].split()[0])))
    except Exception:
        pass
ts = [s[0] for s in samples]
def near(t):
    i = bisect.bisect_left(ts, t); c = [j for j in (i - 1, i) if 0 <= j < len(ts)]
    j = min(c, key=lambda j: abs(ts[j] - t)); return samples[j] if abs(ts[j] - t) < 0.2 else None
for f in sorted(glob.glob(f"{L}/*.replays")):
    g = {}
    for line in open(f):
        w, i, ms = line.split(); g.setdefault(int(i), []).append((float(w), float(ms)))
    for i, reps in sorted(g.items()):
        if len(reps) < 15 or i < 5: continue
        cl = [near(w - ms * 5e-4) for w, ms in reps]; cl = [c for c in cl if c]
        if not cl: continue
        print(f"{os.path.basename(f)[:-8]:10} timing {i:2}: n {len(reps):3} median {st.median(r[1] for r in reps):8.4f} ms  SM median {st.median(c[1] for c in cl):5.0f} MHz  W median {st.median(c[2] for c in cl):4.0f}  ms x MHz / 1000 {st.median(r[1] for r in reps) * st.median(c[1] for c in cl) / 1000:8.3f}")
PY
save; echo "done t=$(el)"
