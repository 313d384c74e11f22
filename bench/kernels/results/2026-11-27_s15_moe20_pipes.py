# MOE20: per-kernel pipe / issue metrics from an ncu raw-page CSV (--set full).
import csv, sys, re
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[hi]
data = [r for r in rows[hi + 2:] if len(r) == len(h)]
want = re.compile(r"(sm__inst_executed_pipe_\w+\.avg\.pct_of_peak_sustained_active|"
                  r"sm__pipe_\w+_cycles_active\.avg\.pct_of_peak_sustained_active|"
                  r"smsp__issue_active\.avg\.pct_of_peak_sustained_active|"
                  r"smsp__inst_executed\.avg\.per_cycle_active|gpu__time_duration\.sum|"
                  r"smsp__warps_eligible\.avg\.per_cycle_active|smsp__warps_active\.avg\.per_cycle_active|"
                  r"sm__cycles_elapsed\.avg\.per_second|smsp__inst_executed\.sum|"
                  r"dram__throughput\.avg\.pct_of_peak_sustained_elapsed|"
                  r"sm__pipe_tensor_op_hmma_cycles_active\.avg\.pct_of_peak_sustained_active)$")
ki = h.index("Kernel Name")
for r in data:
    name = r[ki]
    m = re.search(r"weight_kind\)?\s*(\d+), (true|false)", name)
    print("==", name[:220])
    out = []
    for i, c in enumerate(h):
        if want.match(c):
            try:
                v = float(r[i].replace(",", ""))
            except ValueError:
                continue
            if "pipe" in c and v < 0.5:
                continue
            out.append((c, v))
    for c, v in sorted(out):
        print(f"  {c:75s} {v:14.2f}")
