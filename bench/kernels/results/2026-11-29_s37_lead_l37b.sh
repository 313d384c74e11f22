#!/usr/bin/env bash
# Session 37 lead, call l37b (H200): (1) the FP8-input routing with the device class
# (linear_fp8_dispatch.h): bench_linear_gemm --w8a8-wgmma's "engine" column and the device's HBM bytes per SM cycle;
# (2) the SM clock, power and clock-event reasons sampled every 100 ms (nvidia-smi, read only) beside the routed-MoE
# decode (the engine's configuration, MXFP4, Flash and Pro, T = 1 / 4 / 16 / 64, with --short-read) and beside its
# read ceiling, each output line time-stamped; (3) test_gpu_model on the new routing.
set -uo pipefail
nvidia-smi -L
N=l37b
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N | cut -c1-14)" "$line"; done; }
Q=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw
echo "query: $Q"; nvidia-smi --query-gpu=$Q --format=csv -i 0
nvidia-smi -q -d CLOCK,POWER -i 0 > $L/clock_power_before.txt 2>&1
(while true; do echo "$(date +%s.%N | cut -c1-14), $(nvidia-smi --query-gpu=$Q --format=csv,noheader -i 0)"; sleep 0.1; done) > $L/clocks.csv 2>&1 &
SMI=$!
timeout -s KILL 60 stdbuf -oL $G/bench_linear_gemm --w8a8-wgmma 2 2>&1 | stamp > $L/wgmma.txt
echo "== wgmma t=$(el)"; head -2 $L/wgmma.txt | cut -c1-200; grep -E " wgmma (fl|pro)" $L/wgmma.txt | awk -F'|' '{print $1 "|" $2 "|" $3 "|" $NF}' | cut -c1-180
save
timeout -s KILL 300 stdbuf -oL $G/bench_moe_linear --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --short-read --shapes flash,pro --formats mxfp4 --tokens 1,4,16,64 --replays 15 2>&1 | stamp > $L/decode.txt
echo "== decode t=$(el)"; grep -E "hbm read|%read|rp official|moe_decode s0" $L/decode.txt | cut -c1-200
save
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
nvidia-smi -q -d CLOCK,POWER -i 0 > $L/clock_power_after.txt 2>&1
python3 - $L <<'PY'
import sys, statistics as st
L = sys.argv[1]
rows = []
for line in open(f"{L}/clocks.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        t = float(p[0]); sm = float(p[2].split()[0]); pw = float(p[4].split()[0])
    except Exception:
        continue
    rows.append((t, sm, pw, p[-1]))
def window(t0, t1):
    w = [r for r in rows if t0 <= r[0] <= t1]
    if not w: return "no samples"
    sms = [r[1] for r in w]; pws = [r[2] for r in w]
    reasons = sorted(set(r[3] for r in w))
    return f"{len(w)} samples, SM MHz min/median/max {min(sms):.0f}/{st.median(sms):.0f}/{max(sms):.0f}, W median/max {st.median(pws):.0f}/{max(pws):.0f}, reasons {reasons}"
for name in ("wgmma", "decode"):
    lines = [l.split(" ", 1) for l in open(f"{L}/{name}.txt") if l[:10].isdigit()]
    prev = None
    for ts, text in lines:
        ts = float(ts)
        if prev is not None and ("%read" in text or "rp official" in text or "hbm read" in text or "one launch" in text):
            print(f"{name} [{prev:.1f}-{ts:.1f}] {text.strip()[:110]} :: {window(prev, ts)}")
        prev = ts
PY
save
timeout -s KILL 200 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
save; echo "done t=$(el)"
