#!/usr/bin/env python3
"""Per-case device times from an ncu run over `test_backend_ops --perf --perf-runs R`.

ncu --csv --metrics gpu__time_duration.sum -k regex:NAME test_backend_ops --perf --perf-runs R ...
prints one row per profiled launch in launch order; each perf case launches its kernel(s)
5 + R times (warm-up + timed). This groups the rows into consecutive blocks of --per-case launches
and prints each block's kernel name and median duration (us): the kernel's device time without
the host launch latency that the event-timed medians of a few-microsecond kernel include.
  python3 scripts/ncu_launch_medians.py NCU.csv --per-case 15
"""
import argparse
import statistics
import sys

from ncu_csv import kernel_durations_us


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv_file")
    ap.add_argument("--per-case", type=int, required=True)
    args = ap.parse_args()
    rows = kernel_durations_us(args.csv_file)
    if not rows:
        print("no gpu__time_duration rows", file=sys.stderr)
        return 1
    n = args.per_case
    for i in range(0, len(rows), n):
        block = rows[i : i + n]
        names = sorted({name.split("(")[0][-60:] for name, _ in block})
        print(f"case {i // n:3d}: {statistics.median(t for _, t in block):9.2f} us  "
              f"({len(block)} launches) {' | '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
