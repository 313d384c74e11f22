#!/usr/bin/env bash
# Session 45, call l45g (H200; session 37's l37d on the current kernels: the sustained figures were last taken there):
# the routed-MoE decode (engine's configuration, official bf16; Flash and Pro, MXFP4 and
# NVFP4, T = 1 / 4 / 16 / 64) timed twice in one call: (a) with 100 ms of host idle before every replay
# (--replay-gap-ms 100: each replay starts with the power budget recovered), (b) back to back, 100 replays a row (the
# sustained, power-capped clock). nvidia-smi samples SM clock, power and clock-event reasons every 50 ms (read only);
# each replay is set beside the sample nearest to it.
set -uo pipefail
nvidia-smi -L
N=l45g
source scripts/device_call_prelude.sh
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 -lms 50 > $L/clocks.csv 2>&1 &
SMI=$!
sleep 1
B="$G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmcqayaka --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64"
timeout -s KILL 240 $B --replays 15 --replay-gap-ms 100 --replay-log $L/gap.replays > $L/gap.txt 2>&1; echo "== gap rc=$? t=$(el)"; save
sleep 2
timeout -s KILL 150 $B --replays 100 --replay-log $L/sustained.replays > $L/sustained.txt 2>&1; echo "== sustained rc=$? t=$(el)"; save
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
for f in gap sustained; do echo "== $f"; grep -E "hbm read-only kernel  4096|rp official" $L/$f.txt | cut -c1-110; done
python3 - $L <<'PY'
import sys, bisect, statistics as st, datetime
L = sys.argv[1]
samples = []
for line in open(f"{L}/clocks.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        samples.append((t, float(p[1].split()[0]), float(p[3].split()[0]), p[-1][-2:]))
    except Exception:
        pass
ts = [s[0] for s in samples]
def near(t):
    i = bisect.bisect_left(ts, t); c = [j for j in (i - 1, i) if 0 <= j < len(ts)]
    j = min(c, key=lambda j: abs(ts[j] - t)); return samples[j] if abs(ts[j] - t) < 0.2 else None
for name in ("gap", "sustained"):
    groups = {}
    for line in open(f"{L}/{name}.replays"):
        w, g, ms = line.split(); groups.setdefault(int(g), []).append((float(w), float(ms)))
    for g, reps in sorted(groups.items()):
        cl = [near(w - ms * 5e-4) for w, ms in reps]; cl = [c for c in cl if c]
        if not cl: continue
        print(f"{name} timing {g:3}: n {len(reps):3} median {st.median(r[1] for r in reps):9.4f} ms  SM MHz min/median {min(c[1] for c in cl):5.0f}/{st.median(c[1] for c in cl):5.0f}  W median {st.median(c[2] for c in cl):4.0f}  reasons {sorted(set(c[3] for c in cl))}")
PY
save; echo "done t=$(el)"
