# IDX36: ncu source CSV (SASS) of indexer_select_kernel -> stall samples by reason over the whole
# kernel and over address ranges (offsets from the kernel's first instruction, argv[2:] as
# name=0xLO-0xHI), and the 25 instructions with the most samples.
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1], errors='replace')))
hi = next(i for i, r in enumerate(rows) if 'Source' in [c.strip() for c in r])
h = [c.strip() for c in rows[hi]]
body = [r for r in rows[hi + 1:] if len(r) == len(h)]
A = h.index('Address'); S = h.index('Source'); ALL = h.index('Warp Stall Sampling (All Samples)')
EX = h.index('Instructions Executed')
reasons = [i for i, c in enumerate(h) if c.startswith('stall_') and 'Not Issued' not in c]
num = lambda x: float(x.replace(',', '') or 0)
base = int(body[0][A], 16)
ins = [(int(r[A], 16) - base, r[S].strip(), num(r[EX]), num(r[ALL]),
        {h[i][6:]: num(r[i]) for i in reasons}) for r in body]
ranges = [('all', 0, 1 << 40)]
for a in sys.argv[2:]:
    n, rg = a.split('=')
    lo, hi_ = (int(x, 16) for x in rg.split('-'))
    ranges.append((n, lo, hi_))
for n, lo, hi_ in ranges:
    c = collections.Counter(); ex = smp = 0
    for a, s, e, sm, rs in ins:
        if lo <= a < hi_:
            c.update(rs); ex += e; smp += sm
    top = ', '.join(f'{k} {v:.0f} ({v / max(smp, 1) * 100:.0f}%)' for k, v in c.most_common(7) if v)
    print(f'{n:10s} inst {ex:8.0f} samples {smp:6.0f}: {top}')
print('top instructions (offset, samples, executed, reasons):')
for a, s, e, sm, rs in sorted(ins, key=lambda x: -x[3])[:25]:
    top = ' '.join(f'{k}:{v:.0f}' for k, v in collections.Counter(rs).most_common(3) if v)
    print(f'  0x{a:05x} {sm:5.0f} {e:6.0f}  {s[:60]:60s} {top}')
