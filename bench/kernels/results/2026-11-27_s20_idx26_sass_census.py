# IDX26 (session 20): usage: cuobjdump -sass OBJ, one kernel extracted as "ADDR INSTRUCTION" lines (address hex, no /* */), then this script.
# Common-path census of the fast list kernel's loop (one-product branch, non-issuing lanes), ranges found
# from the control flow: census2.py list.txt
import sys, re, collections
L=[(int(l.split(' ',1)[0],16), l.split(' ',1)[1].strip()) for l in open(sys.argv[1]) if l.strip()]
idx={a:i for i,(a,s) in enumerate(L)}
def tgt(s):
    m=re.search(r'BRA (?:\w+, )?0x([0-9a-f]+)',s); return int(m.group(1),16) if m else None
# the pass loop: the HGMMA with gsb0 in the one-branch (first), the VOTE before it
hg=[i for i,(a,s) in enumerate(L) if 'HGMMA' in s and 'gsb0' in s][0]
vote=max(i for i in range(hg) if 'VOTE.ANY' in L[i][1])
vbr=next(i for i in range(vote,hg) if re.search(r'@P0 BRA',L[i][1]))
ibr=hg+1; assert 'BRA' in L[ibr][1]
Y=idx[tgt(L[ibr][1])]
zb=next(i for i in range(Y,len(L)) if L[i][1].startswith('BRA '))
Z=idx[tgt(L[zb][1])]
back=next(i for i in range(Z,len(L)) if 'BRA' in L[i][1] and tgt(L[i][1]) is not None and tgt(L[i][1])<=L[vote][0] and tgt(L[i][1])<L[i][0])
head=idx[tgt(L[back][1])]
segs=[(head,vbr+1),(vbr+1,ibr+1),(Y,zb+1),(Z,back+1)]
ins=[L[i][1] for a,b in segs for i in range(a,b)]
def op(s): return re.sub(r'^@!?U?P\w+\s+','',s).split(' ')[0]
def cat(s):
    o=op(s); b=o.split('.')[0]
    if b=='HGMMA' or o.startswith('WARPGROUP'): return 'wgmma+fence/wait'
    if b in ('HMUL2','HFMA2'): return 'widen: bf16 product'
    if b in ('FMNMX','FFMA','FADD','FSEL','SHFL','FSETP','FMUL'): return 'epilogue fp/shfl'
    if b in ('ATOMS','STG'): return 'store+hist'
    if b.startswith('SYNCS') or b in ('VOTE','WARPSYNC','BSSY','BSYNC','BRA'): return 'ring/sync/branch'
    if b=='LDS': return 'LDS'
    if b.startswith('U') or b in ('R2UR','S2UR','PLOP3'): return 'uniform'
    return 'int ALU'
c=collections.Counter(cat(s) for s in ins)
print(f'{sys.argv[1]}: {len(ins)} per warp-pass; '+', '.join(f'{k} {v}' for k,v in c.most_common()))
print('  ops:', ', '.join(f'{k} {v}' for k,v in collections.Counter(op(s) for s in ins).most_common(24)))
