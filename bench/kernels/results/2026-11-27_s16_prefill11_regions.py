# PREFILL11 (session 16): ncu warp-stall samples of w4a8_ws by code region (consumer main loop /
# consumer epilogue / producer / out-of-line wait loops), from an ncu source-page CSV (gzipped,
# `ncu -i R --page source --csv --print-source sass`) and cuobjdump -sass of the same binary.
# Usage: python3 2026-11-27_s16_prefill11_regions.py SRC_CSV_GZ SASS_FILE
# (kernel names are those of commit 27cb74c: ws_kernel<UP, LEAD, VARIANT>).
import gzip,csv,re,collections,sys
data=gzip.open(sys.argv[1],'rt',errors='replace').read().splitlines()
heads=[i for i,l in enumerate(data) if l.startswith('"Address","Source"')]
def load(k):
    h=heads[k]; end=heads[k+1] if k+1<len(heads) else len(data)
    rows=list(csv.reader(data[h:end])); hdr=rows[0]
    body=[r for r in rows[1:] if len(r)==len(hdr)]
    return hdr,body
def regions_from_sass(pat):
    ins=[];on=False
    for l in open(sys.argv[2]):
        if 'Function :' in l: on = pat in l; continue
        if on:
            m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
            if m: ins.append(m.group(2).strip())
    return ins
def analyze(k,pat,label):
    hdr,body=load(k)
    ins=regions_from_sass(pat)
    assert len(ins)==len(body),(len(ins),len(body))
    ci=hdr.index('Warp Stall Sampling (All Samples)'); ei=hdr.index('Instructions Executed')
    reasons=[i for i,c in enumerate(hdr) if c.startswith('stall_') and 'Not Issued' not in c]
    # region boundaries
    setmax=[i for i,t in enumerate(ins) if 'SETMAXREG' in t]
    prod_start=setmax[1]
    exit_i=[i for i,t in enumerate(ins) if t.endswith('EXIT') and i>prod_start][-1]
    named=[i for i,t in enumerate(ins) if re.match(r'BAR.SYNC.DEFER_BLOCKING R\d+, 0x80',t) and i<prod_start]
    # pairs: (item start sync, epilogue sync) per N
    reg=['other']*len(ins)
    for a,b in zip(named[0::2],named[1::2]):
        for i in range(a,b): reg[i]='cons_main'
    # epilogue: from each second sync up to the next first sync or the consumer EXIT
    cons_exit=[i for i,t in enumerate(ins) if t.endswith('EXIT') and i<prod_start][-1]
    firsts=named[0::2]+[cons_exit+1]
    for b in named[1::2]:
        nxt=min(x for x in firsts if x>b)
        for i in range(b,nxt): reg[i]='cons_epi'
    for i in range(prod_start,exit_i+1): reg[i]='producer'
    # out-of-line retry loops after the producer exit: attribute via referencing branches
    addr=[int(r[0],16) for r in body]
    a2i={a:i for i,a in enumerate(addr)}
    for i,t in enumerate(ins):
        m=re.search(r'BRA (0x[0-9a-f]+)',t)
        if m and i<exit_i:
            # the ncu source holds absolute addresses; local SASS has offsets: use body's Source column
            pass
    for i,r in enumerate(body):
        if i>exit_i:
            pass
    # use body's Source for branch targets (absolute)
    for i,r in enumerate(body):
        if i>=exit_i: continue
        m=re.search(r'BRA (0x[0-9a-f]+)',r[hdr.index('Source')])
        if m:
            tg=int(m.group(1),16)
            j=a2i.get(tg)
            if j is not None and j>exit_i:
                for q in range(j,min(j+3,len(ins))): reg[q]=reg[i]+'_wait'
    tot=collections.Counter(); rs=collections.defaultdict(collections.Counter); ex=collections.Counter()
    allt=0
    for i,r in enumerate(body):
        s=float(r[ci] or 0); allt+=s
        tot[reg[i]]+=s; ex[reg[i]]+=float(r[ei] or 0)
        for q in reasons:
            v=float(r[q] or 0)
            if v: rs[reg[i]][hdr[q]]+=v
    print(f'== {label}: samples {allt:.0f}')
    for k2,v in tot.most_common():
        top=', '.join(f'{a[6:]} {b/v*100:.0f}%' for a,b in rs[k2].most_common(4))
        print(f'  {k2:16s} {v/allt*100:5.1f}%  warp-instr executed {ex[k2]:.3g}   [{top}]')
    return hdr,body,ins,reg
hdr,body,ins,reg=analyze(0,'ws_kernelILb1ELi6ELi0EEE','L1 (UP) w4a8_ws, Flash T=4096')
# top epilogue instructions
ci=hdr.index('Warp Stall Sampling (All Samples)')
ep=[(float(body[i][ci] or 0),i,ins[i]) for i in range(len(ins)) if reg[i]=='cons_epi']
ep.sort(reverse=True)
tot=sum(float(r[ci] or 0) for r in body)
print(' top epilogue instructions:')
for s,i,t in ep[:12]:
    r=body[i]; rs=sorted([(float(r[q] or 0),hdr[q]) for q,c in enumerate(hdr) if c.startswith('stall_') and 'Not Issued' not in c],reverse=True)[:2]
    print(f'   {i:6d} {s/tot*100:5.2f}% {t[:60]:60s} {rs}')
byop=collections.Counter()
for s,i,t in ep:
    op=(t.split()[1] if t.startswith('@') else t.split()[0]).split('.')[0]; byop[op]+=s
print(' epilogue samples by opcode:', ', '.join(f'{k} {v/tot*100:.1f}%' for k,v in byop.most_common(10)))
analyze(2,'ws_kernelILb0ELi6ELi0EEE','L2 (down) w4a8_ws, Flash T=4096')
