# Summarizes an ncu raw-page CSV (one row per kernel launch): the run1.sh metrics and the warp
# stall reasons per issued instruction (WarpStateStats), top 8.
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[hi]
body = [r for r in rows[hi + 1:] if len(r) == len(h) and r[h.index("Kernel Name")].strip() and "moe" in r[h.index("Kernel Name")]]
keys = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second",
        "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed.sum",
        "smsp__warps_active.avg.per_cycle_active", "smsp__warps_eligible.avg.per_cycle_active",
        "dram__bytes_read.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors_op_read.sum",
        "lts__t_sector_op_read_hit_rate.pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"]
units = rows[hi + 1] if len(rows) > hi + 1 else []
stall = [i for i, c in enumerate(h) if "issue_stalled" in c and c.endswith("per_issue_active.ratio")]
for r in body:
    name = r[h.index("Kernel Name")]
    tpl = name[name.find("<"):name.find(">") + 1] if "<" in name else name[:60]
    print("kernel", tpl, "grid", r[h.index("Grid Size")] if "Grid Size" in h else "")
    for k in keys:
        if k in h:
            i = h.index(k)
            print(f"  {k:58s} {r[i]:>16s} {units[i] if i < len(units) else ''}")
    st = []
    for i in stall:
        try: st.append((float(r[i].replace(",", "")), h[i].replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", "")))
        except ValueError: pass
    st.sort(reverse=True)
    print("  stalls (warp-cycles per issued instr):", ", ".join(f"{n} {v:.2f}" for v, n in st[:9]), f"| sum {sum(v for v, _ in st):.2f}")
