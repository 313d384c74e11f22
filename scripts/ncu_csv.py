"""Rows of `ncu --csv --metrics gpu__time_duration.sum` output: (kernel name, microseconds) per
profiled launch, in launch order. Shared by ncu_launch_medians.py and ncu_step_breakdown.py."""
import csv

_SCALE_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


def kernel_durations_us(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = []
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(r["Metric Value"].replace(",", ""))
        rows.append((r["Kernel Name"], value * _SCALE_TO_US[r.get("Metric Unit", "")]))
    return rows
