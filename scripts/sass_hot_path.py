#!/usr/bin/env python3
"""Counts the instructions on the common path of one round of moe_decode's ring loop, from SASS.

Usage: cuobjdump -sass X.cubin | sass_hot_path.py NAME_SUBSTRING [--hmma N] [--list]

For the first function whose mangled name contains NAME_SUBSTRING, lists its loops (backward
branches: region, instruction count, HMMA count) with --list; then takes the smallest loop with
N HMMA (default 32: one ring round of W1/W3 or W2P, both round variants) and walks it from its
first instruction as the common case runs:
  - an unconditional BRA is taken;
  - a conditional BRA is not taken (the E8M0 > 128 variant behind the warp vote, the refill's
    j < nr test), except the first one after the round's 4 weight copies (LDGSTS ... .128): the
    skip of the scale-chunk copy, taken in all rounds but one per chunk;
  - the walk stops at the loop's back edge.
Prints the instruction count and the count by opcode. A census aid for comparing builds (session
42: 341 -> 317 for the T = 1 W1/W3 round), not a timing: what ptxas placed on that path.
"""
import re
import sys
from collections import Counter


def parse(stream, sub):
    ins, take = [], False
    for line in stream:
        m = re.search(r"Function : (\S+)", line)
        if m:
            if take:
                break
            take = sub in m.group(1)
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and take:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    return ins


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def loops(ins):
    out = []
    for a, t in ins:
        if opcode(t) == "BRA":
            m = re.search(r"0x([0-9a-f]+)", t)
            if m and int(m.group(1), 16) <= a:
                lo = int(m.group(1), 16)
                body = [x for x in ins if lo <= x[0] <= a]
                out.append((lo, a, len(body), sum(1 for _, t2 in body if "HMMA" in t2)))
    return out


def walk(body):
    index = {a: i for i, (a, _) in enumerate(body)}
    count, copies, i, steps = Counter(), 0, 0, 0
    while i < len(body) and steps < 10000:
        steps += 1
        a, t = body[i]
        op = opcode(t)
        count[op] += 1
        if "LDGSTS" in t and ".128" in t:
            copies += 1
        if op == "BRA":
            target = int(re.search(r"0x([0-9a-f]+)", t).group(1), 16)
            if target <= a:
                break
            conditional = t.startswith("@")
            if not conditional or copies == 4:
                if copies == 4:
                    copies = 1 << 30  # only the first branch after the copies
                i = index[target]
                continue
        i += 1
    return count


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    sub, hmma, show = args[0], 32, "--list" in args
    if "--hmma" in args:
        hmma = int(args[args.index("--hmma") + 1])
    ins = parse(sys.stdin, sub)
    if not ins:
        sys.exit(f"no function matching {sub}")
    found = loops(ins)
    if show:
        for lo, hi, n, h in found:
            print(f"loop [{lo:#x}, {hi:#x}] {n} instructions, HMMA {h}")
    cands = [x for x in found if x[3] == hmma]
    if not cands:
        sys.exit(f"no loop with {hmma} HMMA")
    lo, hi, n, _ = min(cands, key=lambda x: x[2])
    count = walk([x for x in ins if lo <= x[0] <= hi])
    print(f"loop [{lo:#x}, {hi:#x}] ({n} instructions): common path {sum(count.values())}")
    print("  " + ", ".join(f"{k} {v}" for k, v in count.most_common()))


if __name__ == "__main__":
    main()
