import re,sys,statistics as st
for tag in ['base','w','w2','d','wd']:
    txt=open(f'bench_{tag}.txt').read()
    res={512:[],1024:[]}
    for m in re.finditer(r'indexer phase trace, T=1 entries=262144 top_k=(\d+):\n  trace score_list.*?\n(.*?)  trace collect',txt,re.S):
        k=int(m.group(1)); body=m.group(2)
        le=re.search(r'score loop end \(1\)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)',body)
        se=re.search(r'select end max\s+([\d.]+)',body)
        res[k].append(tuple(map(float,le.groups()))+(float(se.group(1)),))
    out=[]
    for k in (512,1024):
        r=res[k]
        if not r: continue
        out.append(f"top-{k} n={len(r)} loop end {st.median(x[0] for x in r):.2f}/{st.median(x[1] for x in r):.2f}/{st.median(x[2] for x in r):.2f} select end max {st.median(x[3] for x in r):.2f}")
    print(tag,' | '.join(out))
