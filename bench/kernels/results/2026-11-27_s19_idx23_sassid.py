# SASS + res-usage identity of renamed kernels: pairs (before-name-substring, after-name-substring).
import re, sys
def funcs(f):
    d = {}; cur = None
    for l in open(f):
        if 'Function :' in l:
            cur = l.split('Function :')[1].strip(); d[cur] = []; continue
        if cur:
            m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\*', l)
            if m: d[cur].append(re.sub(r'\s+', ' ', m.group(2)))
    return d
def res(f):
    d = {}; cur = None
    for l in open(f):
        if l.startswith(' Function'): cur = l.split()[1].rstrip(':')
        elif cur and 'REG:' in l: d[cur] = l.strip(); cur = None
    return d
b, a = funcs(sys.argv[1]), funcs(sys.argv[2]); rb, ra = res(sys.argv[3]), res(sys.argv[4])
pairs = [p.split('=') for p in sys.argv[5:]]
def one(d, sub):
    k = [n for n in d if sub in n]; assert len(k) == 1, (sub, k); return k[0]
ok = True
for x, y in pairs:
    nb, na = one(b, x), one(a, y)
    same = b[nb] == a[na]; rs = rb.get(nb) == ra.get(na)
    ok &= same and rs
    print(f"{'IDENTICAL' if same else 'DIFFERS'} SASS ({len(b[nb])} / {len(a[na])} instructions), res-usage {'identical' if rs else 'DIFFERS'}: {x} -> {y}  [{ra.get(na)}]")
# every other kernel: same name, same SASS
others = [n for n in b if not any(x in n for x, _ in pairs) and "three_kernel" not in n]
same = sum(1 for n in others if n in a and a[n] == b[n] and rb.get(n) == ra.get(n))
print(f"other kernels: {same}/{len(others)} identical by name (SASS + res-usage); after has {len(a)} kernels, before {len(b)}")
print("all pairs identical" if ok else "not all pairs identical"); sys.exit(0 if ok else 1)
