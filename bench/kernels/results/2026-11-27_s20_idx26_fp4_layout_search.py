# IDX26 (session 20): search of FP4 stored-word bit orders by integer instructions per word (4 pairs to
# bf16x2 placement sign 15/31, magnitude 8:6/24:22). Pair forms: rotation (1 op if 0, else 2), split sign/magnitude
# rotations (3 if one is 0, else 4), and (u & A) * (2^a + 2^b) & M (3 ops; carry-free, junk off M). Result: 10 at best
# (rot0 + rot10 + one IMAD pair + one split), vs IDX24's 11: one instruction per word, 8 per warp-pass; not pursued.
# Search FP4 stored-word layouts: 4 pairs, each extracted to M = sign 15/31, magnitude 8:6 / 24:22.
import itertools
M=[6,7,8,15,22,23,24,31]; S=[15,31]; G=[6,7,8,22,23,24]
def rotsrc(targets, r): return frozenset((t - r) % 32 for t in targets)
cands=[]  # (cost, stored positions, description)
for r in range(32):
    cands.append((1 if r==0 else 2, rotsrc(M,r), f'rot{r}'))
for ra in range(32):
    for rb in range(32):
        if ra==rb: continue
        st=rotsrc(S,ra)|rotsrc(G,rb)
        if len(st)!=8: continue
        cost = 3 if (ra==0 or rb==0) else 4
        cands.append((cost, st, f'split{ra},{rb}'))
# IMAD: t = u & A, (t << a) + (t << b) (mod 2^32), & M: stored sign positions 15-a, 31-a; mags 6-b.., 22-b..
for a in range(16):
    for b in range(7):
        if a==b: continue
        sig=[15-a,31-a]; mag=[p-b for p in G]
        st=frozenset(sig+mag)
        if len(st)!=8 or min(st)<0: continue
        c1={p+a for p in st if p+a<32}; c2={p+b for p in st if p+b<32}
        if c1 & c2: continue  # carries possible
        out=(c1|c2)&set(M)
        want=set(M)
        # each wanted position must come from exactly the right source, junk must avoid M
        ok = all(((p+a) in M) == (p in sig) for p in st if p+a<32) and all(((p+b) in M) == (p in mag) for p in st if p+b<32)
        ok = ok and all(p+a<32 for p in sig) and all(p+b<32 for p in mag)
        if ok: cands.append((3, st, f'imad{a},{b}'))
print(len(cands))
best=None
cands.sort(key=lambda c:c[0])
full=frozenset(range(32))
res=[]
def rec(i, used, chosen, cost):
    global best
    if best is not None and cost>=best+1: return
    if len(chosen)==4:
        if used==full:
            res.append((cost,[c[2] for c in chosen]))
            if best is None or cost<best: best=cost
        return
    for j in range(i,len(cands)):
        c=cands[j]
        if c[1]&used: continue
        rec(j+1, used|c[1], chosen+[c], cost+c[0])
rec(0, frozenset(), [], 0)
res.sort()
print('best', best); print(res[:20])
