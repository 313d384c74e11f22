#!/usr/bin/env python3
"""Counts the SASS instructions of the innermost hot loops of CUDA kernels.

Usage: cuobjdump -sass X.o | sass_loop_count.py [name-substring ...]
For each function (matching every substring), finds the backward branches, and for the
loop region [target, branch] with the most HMMA instructions reports the instruction count
by opcode class. Forward branches inside the region (rare slow paths, e.g. MXFP4 E8M0 > 128)
are reported as `branches`; their target blocks are counted as part of the region when they
lie inside it, so the count is an upper bound of the hot path unless noted.
"""
import re
import sys
from collections import Counter

subs = sys.argv[1:]
funcs = {}
cur = None
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        cur = m.group(1)
        funcs[cur] = []
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
    if m and cur:
        funcs[cur].append((int(m.group(1), 16), m.group(2).strip()))

labels_re = re.compile(r"`\(\.L_x_(\d+)\)")
for name, ins in funcs.items():
    if not all(s in name for s in subs):
        continue
    # label addresses come from the ".L_x_N:" lines, which the regex above skips; recover
    # them from branch targets by address: cuobjdump prints targets as labels only, so
    # use nvdisasm-style fallback: take the address printed in BRA operands when present.
    loops = []
    for i, (a, t) in enumerate(ins):
        m = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", t)
        if "BRA" in t:
            m2 = re.search(r"0x([0-9a-f]+)", t)
            if m2:
                tgt = int(m2.group(1), 16)
                if tgt <= a:
                    loops.append((tgt, a))
    best = None
    for tgt, a in loops:
        body = [t for (x, t) in ins if tgt <= x <= a]
        h = sum(1 for t in body if "HMMA" in t)
        if h and (best is None or h > best[0] or (h == best[0] and len(body) < len(best[1]))):
            best = (h, body, tgt, a)
    if not best:
        print(f"{name}: no HMMA loop found")
        continue
    h, body, tgt, a = best
    ops = Counter()
    for t in body:
        t = re.sub(r"^@!?U?P\w+\s+", "", t)
        ops[t.split()[0].split(".")[0]] += 1
    print(f"{name}\n  loop [{tgt:#x}, {a:#x}]: {len(body)} instructions, HMMA {h}")
    print("  " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))
