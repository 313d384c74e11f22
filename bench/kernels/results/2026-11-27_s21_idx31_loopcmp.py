#!/usr/bin/env python3
# IDX31 (session 21): compares the fast list kernel's SASS from the first HGMMA to the end between two
# objects (branch/call targets rebased to the first HGMMA). Usage: loopcmp.py BEFORE.o AFTER.o
import re,subprocess,sys
CU='/tmp/triton_whl/triton/backends/nvidia/bin/cuobjdump'
def kern(o, pat='indexer_score_three_kernelI13__nv_bfloat16Li3ELb1ELb1E'):
    txt=subprocess.run([CU,'-sass',o],capture_output=True,text=True).stdout
    out=[];on=False
    for l in txt.splitlines():
        if 'Function :' in l: on = pat in l; continue
        if on:
            m=re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*(/\*.*)?$',l)
            if m: out.append((int(m.group(1),16),m.group(2).rstrip(' ;')))
    return out
def norm(ins,base):
    # rebase absolute addresses used by BRA/CALL/BSSY etc
    def f(m):
        v=int(m.group(0),16)
        return 'A%+d'%(v-base) if v>=0x100 and v<0x100000 else m.group(0)
    return re.sub(r'0x[0-9a-f]+',f,ins) if re.search(r'BRA|BSSY|CALL|JMP|WARPSYNC|BREAK|SSY',ins) else ins
a=kern(sys.argv[1]); b=kern(sys.argv[2])
def loop(k):
    i=next(i for i,(ad,s) in enumerate(k) if 'HGMMA' in s)
    # stop at the first EXIT after the loop? take everything from the first HGMMA
    return [norm(s,k[i][0]) for ad,s in k[i:]], k[i][0], len(k)
la,ba,na=loop(a); lb,bb,nb=loop(b)
print('first HGMMA', hex(ba), hex(bb), 'instrs', na, nb, 'tail', len(la), len(lb))
import difflib
d=[l for l in difflib.unified_diff(la,lb,lineterm='',n=0)]
print('tail diff lines', len(d)); print('\n'.join(d[:40]))
