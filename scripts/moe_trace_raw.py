#!/usr/bin/env python3
"""Summaries of the routed-MoE decode's raw block traces.

The diagnostic bench build (bench_moe_linear compiled with -DDSV4_MOE_TRACE, see
bench/kernels/results/2026-11-26_s13_moe15_NOTES.md section 5) appends one line per block of every
traced call to $DSV4_MOE_TRACE_RAW: label, call, kind (0 W1/W3, 1 W2, 2 combine), SM, slot (+1000 for
a W1/W3 block that folded h), blockIdx.x, then the stamps entry / waited / loop end / exit in us after
the call's first W1/W3 entry (-1 where a stamp was not taken). A build with -DDSV4_MOE_TRACE_LASTWARP too
(scripts/build_moe_variant_bench.sh; session 45) stamps the last warp's loop end instead of warp 0's, and
for W1/W3 warp 0's loop end in place of "waited"; one with -DDSV4_MOE_TRACE_EPI records for W1/W3 the last warp's
loop end / after the hf stores / after the fold's count / exit in the four columns (W2 and the combine as usual).
Session 50's runtime modes (DSV4_MOE_TRACE_MODE in the bench, any trace build) change W2's columns only: mode 1 puts
"after the chunk's derivation" / "before the readiness wait" in "waited" / "loop end", mode 2 "after the wait" /
"after the staged h row" there.

  moe_trace_raw.py FILE summary            per (label, call, kind): blocks, row groups, most blocks
                                           resident at once, first entry / last exit
  moe_trace_raw.py FILE rates [--call N]   per (label, kind): the weight bytes each SM streamed while
                                           a block of that kind was inside its loop (GB/s per SM:
                                           median / 10th / 90th percentile), and per-SM loop ends
                                           grouped by the SM's block count
  moe_trace_raw.py FILE timeline LABEL [--call N] [--step US]
                                           blocks resident / inside their loop over time, per kind

Labels are "SHAPE FORMAT T=N CONFIG" as the bench prints them (flash / pro, mxfp4 / nvfp4). Bytes per
block (rates) assume the engine's official path: W1/W3 blocks stream W1 and W3 rows of the block's
row group over the hidden dimension, W2 blocks W2 rows over the intermediate one, 4-bit weights plus
one scale byte per 32 (MXFP4) or 16 (NVFP4) weights.
"""
import argparse
import collections
import statistics
import sys

SHAPES = {"flash": (4096, 2048), "pro": (7168, 3072)}  # hidden, intermediate
KINDS = {0: "W1/W3", 1: "W2", 2: "combine"}


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) != 10:
                continue
            recs.append({"label": p[0], "call": int(p[1]), "kind": int(p[2]), "sm": int(p[3]),
                         "slot": int(p[4]) % 1000, "bx": int(p[5]),
                         "t": [float(x) for x in p[6:10]]})
    return recs


def group(recs, call=None):
    g = collections.defaultdict(list)
    for r in recs:
        if call is None or r["call"] == call:
            g[(r["label"], r["call"], r["kind"])].append(r)
    return g


def max_resident(blocks):
    ev = sorted([(b["t"][0], 1) for b in blocks] + [(b["t"][3], -1) for b in blocks])
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def block_bytes(label, kind, row_groups):
    shape, fmt = label.split()[0], label.split()[1]
    if shape not in SHAPES or kind not in (0, 1):
        return None
    hidden, inter = SHAPES[shape]
    rows = (inter if kind == 0 else hidden) // row_groups
    kdim = hidden if kind == 0 else inter
    matrices = 2 if kind == 0 else 1
    per_weight = 0.5 + 1.0 / (32 if fmt == "mxfp4" else 16)
    return rows * kdim * matrices * per_weight


def busy_time(intervals):
    intervals = sorted(intervals)
    total, (cs, ce) = 0.0, intervals[0]
    for a, b in intervals[1:]:
        if a > ce:
            total += ce - cs
            cs, ce = a, b
        else:
            ce = max(ce, b)
    return total + ce - cs


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def cmd_summary(recs, _):
    for (label, call, kind), bl in sorted(group(recs).items()):
        print(f"{label} call {call} {KINDS.get(kind, kind)}: {len(bl)} blocks, "
              f"{max(b['bx'] for b in bl) + 1} row groups, {len({b['slot'] for b in bl})} slots, "
              f"{max_resident(bl)} resident at most, entry {min(b['t'][0] for b in bl):.2f} us, "
              f"last exit {max(b['t'][3] for b in bl):.2f} us")


def cmd_rates(recs, args):
    for (label, call, kind), bl in sorted(group(recs, args.call).items()):
        if kind not in (0, 1):
            continue
        per_block = block_bytes(label, kind, max(b["bx"] for b in bl) + 1)
        if per_block is None:
            continue
        by_sm = collections.defaultdict(list)
        for b in bl:
            if b["t"][1] >= 0 and b["t"][2] >= b["t"][1]:
                by_sm[b["sm"]].append((b["t"][1], b["t"][2]))
        rates = [len(iv) * per_block / busy_time(iv) / 1e3 for iv in by_sm.values()
                 if busy_time(iv) > 0]
        if not rates:
            continue
        print(f"{label} call {call} {KINDS[kind]}: {per_block / 1024:.0f} KB a block, GB/s per SM "
              f"while in the loop: median {statistics.median(rates):.1f}, p10 {pct(rates, 0.1):.1f}, "
              f"p90 {pct(rates, 0.9):.1f} ({len(rates)} SMs)")
        by_count = collections.defaultdict(list)
        for iv in by_sm.values():
            by_count[len(iv)].append(max(e for _, e in iv))
        for n in sorted(by_count):
            v = by_count[n]
            print(f"    SMs with {n} blocks: {len(v)}, last loop end {min(v):.1f} / "
                  f"{statistics.median(v):.1f} / {max(v):.1f} us")


def cmd_timeline(recs, args):
    calls = sorted({r["call"] for r in recs if r["label"] == args.label})
    if not calls:
        sys.exit(f"no records with label {args.label!r}")
    call = args.call if args.call is not None else calls[0]
    g = group([r for r in recs if r["label"] == args.label], call)
    end = max(b["t"][3] for bl in g.values() for b in bl)
    kinds = sorted(k for (_, _, k) in g)
    print("us     " + "  ".join(f"{KINDS[k]:>9} res / loop" for k in kinds))
    t = 0.0
    while t <= end + args.step:
        cols = []
        for k in kinds:
            bl = g[(args.label, call, k)]
            res = sum(1 for b in bl if b["t"][0] <= t < b["t"][3])
            loop = sum(1 for b in bl if 0 <= b["t"][1] <= t < b["t"][2])
            cols.append(f"{res:9d} / {loop:4d}")
        print(f"{t:6.1f} " + "  ".join(cols))
        t += args.step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("summary")
    r = sub.add_parser("rates")
    r.add_argument("--call", type=int, default=0)
    tl = sub.add_parser("timeline")
    tl.add_argument("label")
    tl.add_argument("--call", type=int)
    tl.add_argument("--step", type=float, default=4.0)
    args = ap.parse_args()
    recs = load(args.file)
    if not recs:
        sys.exit(f"{args.file}: no trace records")
    {"summary": cmd_summary, "rates": cmd_rates, "timeline": cmd_timeline}[args.cmd](recs, args)


if __name__ == "__main__":
    main()
