#!/usr/bin/env python3
"""IDX34 (session 22): one kernel's SASS, BEFORE.o vs AFTER.o, aligned with difflib after
normalizing branch targets / immediates (0x...) and, with --ur, uniform register numbers (URn ->
UR). Prints the equal / differing index ranges and the first and last wgmma's index: a pass loop
is "identical modulo UR numbering" when one equal range covers it.
  2026-11-27_s22_idx34_loopdiff.py BEFORE.o AFTER.o KERNEL_REGEX [--ur]   (env CUOBJDUMP)"""
import difflib, os, re, subprocess, sys


def get(obj, pat):
    out = subprocess.run([os.environ.get("CUOBJDUMP", "cuobjdump"), "-sass", obj],
                         capture_output=True, text=True, check=True).stdout
    cur, res = None, {}
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            res[cur] = []
            continue
        m2 = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*/\*", line)
        if cur and m2:
            res[cur].append(m2.group(2))
    return [v for k, v in res.items() if re.search(pat, k)][0]


x, y = get(sys.argv[1], sys.argv[3]), get(sys.argv[2], sys.argv[3])
ur = "--ur" in sys.argv


def norm(l):
    l = re.sub(r"0x[0-9a-f]+", "X", l)
    return re.sub(r"UR\d+", "UR", l) if ur else l


nx, ny = [norm(l) for l in x], [norm(l) for l in y]
wx = [i for i, l in enumerate(x) if "GMMA" in l]
print(f"lines {len(x)} / {len(y)}; wgmma from {wx[0]} to {wx[-1]} (before)")
for op in difflib.SequenceMatcher(None, nx, ny, autojunk=False).get_opcodes()[:12]:
    print(op[0], op[1], op[2], op[3], op[4])
