#!/usr/bin/env bash
# Session 37 lead, call l37c (H200): does the routed-MoE decode follow the SM clock, and what sets the clock? nvidia-smi
# samples SM clock, power and clock-event reasons every 50 ms (read only; the card's settings untouched) while
# bench_moe_linear (the engine's configuration, official bf16 MXFP4) times many graph replays with --replay-log: Pro
# T = 64, Flash T = 16, Pro T = 4, with idle gaps between them so that each starts at the idle clock; then the same
# bytes as plain reads (--short-read) at Pro T = 64. Each replay is set beside the clock sampled nearest to it.
set -uo pipefail
nvidia-smi -L
N=l37c
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
echo "wall $(date +%s.%N) / smi: $(nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0)"
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 -lms 50 > $L/clocks.csv 2>&1 &
SMI=$!
sleep 2
B="$G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4"
run() { local name=$1; shift; date +%s.%N > $L/$name.start; timeout -s KILL 120 $B "$@" --replay-log $L/$name.replays > $L/$name.txt 2>&1; echo "== $name rc=$? t=$(el)"; grep -E "%read|moe_decode s0|one launch|pair" $L/$name.txt | cut -c1-170; save; sleep 3; }
run pro64 --shapes pro --tokens 64 --replays 150
run flash16 --shapes flash --tokens 16 --replays 400
run pro4 --shapes pro --tokens 4 --replays 400
run pro64read --shapes pro --tokens 64 --replays 60 --short-read
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
python3 - $L <<'PY'
import sys, glob, os, bisect, statistics as st, datetime
L = sys.argv[1]
samples = []
for line in open(f"{L}/clocks.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        samples.append((t, float(p[1].split()[0]), float(p[3].split()[0]), p[-1]))
    except Exception:
        pass
print(f"{len(samples)} clock samples")
ts = [s[0] for s in samples]
def near(t):
    i = bisect.bisect_left(ts, t)
    c = [j for j in (i - 1, i) if 0 <= j < len(ts)]
    j = min(c, key=lambda j: abs(ts[j] - t))
    return samples[j] if abs(ts[j] - t) < 0.2 else None
for f in sorted(glob.glob(f"{L}/*.replays")):
    name = os.path.basename(f)[:-8]
    groups = {}
    for line in open(f):
        w, gid, ms = line.split()
        groups.setdefault(int(gid), []).append((float(w), float(ms)))
    for gid, reps in sorted(groups.items()):
        if len(reps) < 50: continue
        bins = {}
        for w, ms in reps:
            s = near(w - ms * 1e-3 / 2)
            if s is None: continue
            b = ">=1950" if s[1] >= 1950 else "1850-1949" if s[1] >= 1850 else "1750-1849" if s[1] >= 1750 else "<1750"
            bins.setdefault(b, []).append((ms, s[1], s[2], s[3]))
        print(f"{name} timing {gid}: {len(reps)} replays, median {st.median(r[1] for r in reps):.4f} ms, first 5 {[round(r[1],3) for r in reps[:5]]}, last 5 {[round(r[1],3) for r in reps[-5:]]}")
        for b in (">=1950", "1850-1949", "1750-1849", "<1750"):
            if b in bins:
                v = bins[b]
                print(f"   SM {b:9} n={len(v):4} median ms {st.median(x[0] for x in v):.4f}  median MHz {st.median(x[1] for x in v):.0f}  median W {st.median(x[2] for x in v):.0f}  reasons {sorted(set(x[3] for x in v))}")
PY
save; echo "done t=$(el)"
