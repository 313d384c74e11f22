# ncu source CSV (SASS) of indexer_score_three_kernel -> per region (prologue / loop / after) and,
# inside the loop, per category: executed warp instructions and stall samples by reason.
import csv, sys, re, collections
f = sys.argv[1]
rows = list(csv.reader(open(f, errors='replace')))
hi = next(i for i, r in enumerate(rows) if 'Source' in [c.strip() for c in r])
h = [c.strip() for c in rows[hi]]
body = [r for r in rows[hi + 1:] if len(r) == len(h)]
A = h.index('Address'); S = h.index('Source'); ALL = h.index('Warp Stall Sampling (All Samples)'); EX = h.index('Instructions Executed')
reasons = [i for i, c in enumerate(h) if c.startswith('stall_') and 'Not Issued' not in c]
num = lambda x: float(x.replace(',', '') or 0)
base = int(body[0][A], 16)
ins = [(int(r[A], 16) - base, r[S].strip(), num(r[EX]), num(r[ALL]), {h[i][6:]: num(r[i]) for i in reasons}) for r in body]
# the main loop: the backward branch with the largest span holding HGMMAs
best = None
for a, s, *_ in ins:
    m = re.search(r'BRA (0x[0-9a-f]+)', s)
    if m:
        t = int(m.group(1), 16) - base
        if t < a and any('HGMMA' in x[1] for x in ins if t <= x[0] <= a) and (best is None or a - t > best[1] - best[0]): best = (t, a)
lo, hi_ = best
def cat(s):
    op = re.sub(r'^@!?U?P\w+\s+', '', s).split(' ')[0]
    b = op.split('.')[0]
    if b == 'HGMMA' or op.startswith('WARPGROUP'): return 'wgmma + arrive/wait'
    if b in ('HMUL2', 'HFMA2', 'PRMT'): return 'widen: bf16 product / scale bytes'
    if b in ('FMNMX', 'FFMA', 'FADD', 'FSEL', 'SHFL', 'FSETP', 'FMUL'): return 'epilogue: relu / weights / quad'
    if b in ('ATOMS', 'STG'): return 'epilogue: score store + bin'
    if b.startswith('SYNCS') or b == 'UBLKCP' or b == 'UTMALDG': return 'ring: mbarrier / bulk copy'
    if b in ('VOTE', 'WARPSYNC', 'BSSY', 'BSYNC', 'BRA', 'BAR', 'EXIT'): return 'branch / vote / reconverge'
    if b in ('LDS',): return 'LDS (codes, scales, weights, rows)'
    if b.startswith('U') or b in ('R2UR', 'S2UR', 'PLOP3'): return 'uniform (descriptors, loop, stage)'
    if b in ('LDG', 'STS', 'LDC', 'S2R'): return 'other memory'
    return 'integer ALU (widening shifts / masks, addresses)'
reg = collections.defaultdict(lambda: [0.0, 0.0, collections.Counter()])
cats = collections.defaultdict(lambda: [0.0, 0.0, collections.Counter()])
for a, s, ex, smp, rs in ins:
    r = 'prologue' if a < lo else ('loop' if a <= hi_ else 'after the loop (flush, listing)')
    reg[r][0] += ex; reg[r][1] += smp; reg[r][2].update(rs)
    if r == 'loop':
        c = cat(s); cats[c][0] += ex; cats[c][1] += smp; cats[c][2].update(rs)
tot_ex = sum(v[0] for v in reg.values()); tot_s = sum(v[1] for v in reg.values())
wp = float(sys.argv[2]) if len(sys.argv) > 2 else 0
print(f'loop 0x{lo:x}-0x{hi_:x}; executed warp instructions {tot_ex:.0f}, stall samples {tot_s:.0f}')
for k, v in reg.items():
    top = ', '.join(f'{n} {c / max(v[1], 1) * 100:.0f}%' for n, c in v[2].most_common(6) if c)
    print(f'  {k:34s} inst {v[0]:9.0f} ({v[0] / tot_ex * 100:4.1f}%){"  per warp-pass %.0f" % (v[0] / wp) if wp and k == "loop" else ""}  samples {v[1] / tot_s * 100:4.1f}%: {top}')
lp = reg['loop']
print('  loop by category (executed per warp-pass | share of loop samples | top reasons):')
for k, v in sorted(cats.items(), key=lambda kv: -kv[1][1]):
    top = ', '.join(f'{n} {c / max(v[1], 1) * 100:.0f}%' for n, c in v[2].most_common(3) if c)
    print(f'    {k:48s} {v[0] / wp if wp else v[0]:7.1f} | {v[1] / max(lp[1], 1) * 100:5.1f}% | {top}')
ops = collections.Counter()
for a, s, ex, smp, rs in ins:
    if lo <= a <= hi_: ops[re.sub(r'^@!?U?P\w+\s+', '', s).split(' ')[0]] += ex
print('  loop opcodes (executed per warp-pass):', ', '.join(f'{k} {v / wp:.1f}' for k, v in ops.most_common(30)))
