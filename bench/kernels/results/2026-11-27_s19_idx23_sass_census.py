# Per-pass SASS census of indexer_score_three_kernel's loop (common path: non-issuer lanes, the
# one-product widening branch). usage: census.py three_list.txt loop_lo loop_hi issuer_lo issuer_hi alt_lo alt_hi
import sys, re, collections
f, lo, hi, ilo, ihi, alo, ahi = sys.argv[1], *[int(x, 16) for x in sys.argv[2:8]]
ins = []
for l in open(f):
    a, s = l.split(' ', 1)
    a = int(a, 16)
    if lo <= a < hi and not (ilo <= a < ihi) and not (alo <= a < ahi): ins.append((a, s.strip()))
def cat(s):
    op = re.sub(r'^@!?U?P\w+\s+', '', s).split(' ')[0]
    base = op.split('.')[0]
    if base in ('HGMMA',) or op.startswith('WARPGROUP'): return 'wgmma+fence/wait'
    if base in ('HMUL2', 'HFMA2'): return 'widen: bf16 product'
    if base in ('FMNMX', 'FFMA', 'FADD', 'FSEL', 'SHFL', 'FSETP', 'FMUL'): return 'epilogue: relu/weights/quad'
    if base in ('ATOMS', 'STG'): return 'epilogue: store+hist'
    if base.startswith('SYNCS') or base in ('VOTE', 'WARPSYNC', 'BSSY', 'BSYNC', 'BRA'): return 'ring/sync/branch'
    if base in ('LDS',): return 'LDS (codes/scales/weights/rows)'
    if base.startswith('U') or base in ('R2UR', 'S2UR', 'PLOP3'): return 'uniform (desc/loop/addr)'
    return 'int ALU (widen shifts/masks, addr, scale)'
c = collections.Counter(cat(s) for a, s in ins)
ops = collections.Counter(re.sub(r'^@!?U?P\w+\s+', '', s).split(' ')[0] for a, s in ins)
print('instructions per warp-pass (common path):', len(ins))
for k, v in c.most_common(): print(f'  {v:4d}  {k}')
print('  by opcode:', ', '.join(f'{k} {v}' for k, v in ops.most_common(40)))
