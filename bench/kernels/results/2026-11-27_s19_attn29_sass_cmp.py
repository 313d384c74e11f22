#!/usr/bin/env python3
"""ATTN29: SASS of attention_decode.cu.o kernels against two references, by kernel role.

usage: 2026-11-27_s19_attn29_sass_cmp.py NEW.o MAIN.o BASE.o   (CUOBJDUMP: cuobjdump to use)
The ws kernel instances are keyed by their template arguments (sched, mode, act_t, pool_t) and
key_tma (new: Lb1E / Lb0E or absent = false): new key_tma=true instances are compared with MAIN's
(ATTN28, maps parameter), new key_tma=false and records instances with BASE's (4a2dd45, before
ATTN28); every other kernel by name with MAIN and BASE. Instructions are compared without
addresses and encodings; the -res-usage lines are compared too (registers, stack, CONSTANT[0]).
"""
import os, re, subprocess, sys

CUOBJDUMP = os.environ.get("CUOBJDUMP", "cuobjdump")


def sass(path):
    out = subprocess.run([CUOBJDUMP, "-sass", path], capture_output=True, text=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        if cur:
            m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?);", line)
            if m:
                funcs[cur].append(re.sub(r"\s+", " ", m.group(1)))
    return funcs


def res(path):
    out = subprocess.run([CUOBJDUMP, "-res-usage", path], capture_output=True, text=True).stdout
    d, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
        elif cur and "REG:" in line:
            d[cur] = " ".join(line.split())
            cur = None
    return d


def key(name):
    """(role, key): ws kernels by template arguments and key_tma, others by name less the TU hash."""
    m = re.search(r"attention_decode_ws_kernelI(.*?)EEvPK", name)
    if not m:
        return ("other", re.sub(r"_GLOBAL__N__[0-9a-f]+_\d+_attention_decode_cu_[0-9a-f]+_\d+", "ANON", name))
    args = m.group(1)
    tma = args.endswith("Lb1E") or args.endswith("Lb1")
    args = re.sub(r"Lb[01]E?$", "", args)
    return ("ws_tma" if tma else "ws", args)


new_o, main_o, base_o = sys.argv[1:4]
S = {n: sass(p) for n, p in (("new", new_o), ("main", main_o), ("base", base_o))}
R = {n: res(p) for n, p in (("new", new_o), ("main", main_o), ("base", base_o))}
idx = {n: {key(k): k for k in S[n]} for n in S}
same = diff = 0
for k, name in sorted(idx["new"].items()):
    role, args = k
    # references: ws_tma -> main's ws of the same args; ws (no maps) -> base's; others -> both
    refs = ["main"] if role == "ws_tma" else ["base"] if role == "ws" else ["main", "base"]
    for ref in refs:
        rk = ("ws", args) if role.startswith("ws") else k
        rname = idx[ref].get(rk)
        if rname is None:
            print(f"MISSING in {ref}: {role} {args[:90]}")
            diff += 1
            continue
        a, b = S["new"][name], S[ref][rname]
        ra = re.sub(r"Function \S+", "", R["new"].get(name, ""))
        rb = re.sub(r"Function \S+", "", R[ref].get(rname, ""))
        ok = a == b
        tag = "IDENTICAL" if ok else f"DIFFERS ({len(a)} vs {len(b)} instructions)"
        same += ok
        diff += not ok
        print(f"{tag:32s} new {role:6s} vs {ref:4s} {args[:70]}  | new {ra[-60:]} | {ref} {rb[-60:]}")
print(f"{same} identical, {diff} differing or missing; kernels: new {len(S['new'])}, main {len(S['main'])}, base {len(S['base'])}")
