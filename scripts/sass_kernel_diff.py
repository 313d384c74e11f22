#!/usr/bin/env python3
"""Per-kernel SASS comparison of two builds of the same kernels (refactors that must not change
device code). Each kernel's `cuobjdump -sass` listing is keyed by its mangled name with the
anonymous-namespace tag (which carries a hash of the translation unit) normalized, so kernels may
move between headers or objects; listings are compared line by line, runs of white space
collapsed (cuobjdump pads the encoding column to the widest line of the object's listing, so a
kernel's listing is padded differently once it shares an object with other kernels).

  scripts/sass_kernel_diff.py BEFORE.o[,MORE.o...] AFTER.o[,MORE.o...]

Also compares each kernel's `cuobjdump -res-usage` line (registers, stack, shared, local,
constant bytes). Exit status 0 when both sides hold the same kernels with identical SASS and
resource usage. CUOBJDUMP overrides the
tool (default: cuobjdump on PATH).
"""
import os
import re
import subprocess
import sys

ANON_START = re.compile(r"(\d+)_GLOBAL__N__")


def strip_anon(text):
    """Replaces each length-prefixed anonymous-namespace identifier (<n>_GLOBAL__N__..., n
    characters long, its tail a per-translation-unit hash and counter) by ANON."""
    out, pos = [], 0
    for m in ANON_START.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos:m.start()])
        out.append("ANON")
        pos = m.start(1) + len(m.group(1)) + int(m.group(1))
    out.append(text[pos:])
    return "".join(out)


def kernels(objects):
    out = {}
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    for obj in objects:
        listing = subprocess.run([tool, "-sass", obj], capture_output=True, text=True,
                                 check=True).stdout
        name = None
        for line in listing.splitlines():
            m = re.search(r"Function : (\S+)", line)
            if m:
                name = strip_anon(m.group(1))
                if name in out:
                    sys.exit(f"kernel listed twice: {name}")
                out[name] = []
            elif name is not None and line.strip():
                out[name].append(strip_anon(" ".join(line.split())))
    return out


def resources(objects):
    out = {}
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    for obj in objects:
        listing = subprocess.run([tool, "-res-usage", obj], capture_output=True, text=True,
                                 check=True).stdout
        name = None
        for line in listing.splitlines():
            m = re.search(r"Function (\S+):", line)
            if m:
                name = strip_anon(m.group(1))
            elif name is not None and line.strip():
                out[name] = " ".join(line.split())
                name = None
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = kernels(sys.argv[1].split(",")), kernels(sys.argv[2].split(","))
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    common = sorted(set(a) & set(b))
    differ = [k for k in common if a[k] != b[k]]
    print(f"kernels: before {len(a)}, after {len(b)}; only before {len(only_a)}, only after "
          f"{len(only_b)}; differing {len(differ)}; identical {len(common) - len(differ)}; "
          f"SASS lines before {sum(len(v) for v in a.values())}")
    ra, rb = resources(sys.argv[1].split(",")), resources(sys.argv[2].split(","))
    res_differ = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
    print(f"res-usage: before {len(ra)}, after {len(rb)}; differing {len(res_differ)}")
    for tag, names in (("ONLY BEFORE", only_a), ("ONLY AFTER", only_b), ("DIFFERS", differ),
                       ("RES DIFFERS", res_differ)):
        for k in names:
            print(tag, k)
    return 1 if only_a or only_b or differ or res_differ else 0


if __name__ == "__main__":
    sys.exit(main())
