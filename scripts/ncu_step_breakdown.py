#!/usr/bin/env python3
"""Where one decode step's device time goes, from an ncu run over `test_gpu_model --profile-step N`.

  ncu --profile-from-start off --csv --cache-control none --clock-control none \
      --metrics gpu__time_duration.sum build-gpu/test_gpu_model --profile-step 6 > step.csv
  python3 scripts/ncu_step_breakdown.py step.csv

Prints every launch in order (kernel, us) and then the kernels grouped by name (launches, total
us, share of the step), largest first. The sum is device time only: the gaps between kernels
(launch latency inside the graph, dependencies) are not in it, so compare it with the step's wall
time that test_gpu_model prints.
"""
import argparse
import collections
import sys

from ncu_csv import kernel_durations_us


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv_file")
    ap.add_argument("--list", action="store_true", help="also print every launch in order")
    args = ap.parse_args()
    rows = [(name.split("(")[0], t) for name, t in kernel_durations_us(args.csv_file)]
    if not rows:
        print("no gpu__time_duration rows", file=sys.stderr)
        return 1
    total = sum(t for _, t in rows)
    if args.list:
        for i, (name, t) in enumerate(rows):
            print(f"{i:4d} {t:9.2f} us  {name[-90:]}")
    groups = collections.defaultdict(lambda: [0, 0.0])
    for name, t in rows:
        groups[name][0] += 1
        groups[name][1] += t
    print(f"{len(rows)} launches, {total:.1f} us of device time")
    for name, (n, t) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{t:9.1f} us {100 * t / total:5.1f}% {n:4d} x {t / n:7.2f} us  {name[-90:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
