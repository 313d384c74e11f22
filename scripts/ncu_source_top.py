# Usage: ncu -i REPORT.ncu-rep --page source --csv --print-source sass > src.csv; python3 scripts/ncu_source_top.py src.csv
# (PREFILL8 session 14: the ncu summaries bench/kernels/results/h200_2026-11-26_s14_prefill8_run*_ncu_src_top.txt).
# Summarizes an ncu source-page CSV (SASS): top instructions by stall samples, samples by opcode.
import csv, sys, re, collections
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next(i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r))
h = [c.strip() for c in rows[hi]]
print("columns:", " | ".join(h)[:3000])
body = [r for r in rows[hi + 1:] if len(r) == len(h)]
def col(name):
    for i, c in enumerate(h):
        if name.lower() in c.lower(): return i
    return None
src = h.index("Source"); adr = col("Address")
allc = col("Warp Stall Sampling (All"); noti = col("Warp Stall Sampling (Not")
exe = col("Instructions Executed")
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
stallcols = [i for i, c in enumerate(h) if c.lower().startswith("stall") or "stall_" in c.lower()]
tot = sum(num(r[allc]) for r in body) if allc is not None else 0
print("total samples", tot, "instructions", len(body))
byop = collections.Counter()
for r in body:
    op = re.sub(r"^@!?U?P\w+\s+", "", r[src].strip()).split(" ")[0]
    byop[op] += num(r[allc])
print("samples by opcode:", ", ".join(f"{k} {v/tot*100:.1f}%" for k, v in byop.most_common(25)))
reason = collections.Counter()
for i in stallcols:
    reason[h[i]] = sum(num(r[i]) for r in body)
if reason:
    print("samples by reason:", ", ".join(f"{k} {v/tot*100:.1f}%" for k, v in reason.most_common(14)))
top = sorted(range(len(body)), key=lambda j: -num(body[j][allc]))[:45]
for j in sorted(top):
    r = body[j]
    rs = sorted(((num(r[i]), h[i]) for i in stallcols), reverse=True)[:3]
    print(f"{j:6d} {r[adr] if adr is not None else ''} {num(r[allc])/tot*100:5.2f}% ex={r[exe] if exe is not None else ''} {r[src].strip()[:70]:70s} " + " ".join(f"{n}:{v:.0f}" for v, n in rs if v > 0))
