import re,sys,statistics as st,glob,os
d=sys.argv[1]
cfgs=sys.argv[2].split(',')
keys=['score loop end med','score loop end max','score flushed max','score snapshot med','score snapshot max','score listed max','score end max','select entry max','select wait max','select F max','select end max']
dkeys=['score entry (0)','score loop end (1)','score flush issued (7)','score snapshot ok (3)','score bound known (s2.3)','score listed (4)','score end (2)','select entry (0)','select wait done (1)','select F (3)','select counted (5)','select end (4)','snapshot tries (s2.4)']
for topk in ('512','1024'):
  print('=== top-%s (score_list trace; medians over processes of the per-process value)'%topk)
  res={}
  for c in cfgs:
    txt=open(os.path.join(d,'bench_%s.txt'%c)).read()
    blocks=re.findall(r'indexer phase trace, T=1 entries=262144 top_k=%s:\n  trace score_list.*?listed candidates (\d+)'%topk, txt, re.S)
    bl=re.findall(r'(indexer phase trace, T=1 entries=262144 top_k=%s:\n  trace score_list.*?listed candidates \d+)'%topk, txt, re.S)
    vals={}
    for b in bl:
      for k in keys:
        m=re.search(r'\n    %s\s+([0-9.]+)'%re.escape(k),b)
        if m: vals.setdefault(k,[]).append(float(m.group(1)))
      for k in dkeys:
        m=re.search(r'\n      %s\s+([0-9.nan]+)\s+([0-9.nan]+)\s+([0-9.nan]+)'%re.escape(k),b)
        if m: vals.setdefault('D '+k,[]).append(tuple(float(x) for x in m.groups()))
      m=re.search(r'listed candidates (\d+)',b); vals.setdefault('listed',[]).append(int(m.group(1)))
      m=re.search(r'the CTA that ends last.*?\n((?:      .*\n)+)',b)
      if m:
        for line in m.group(1).splitlines():
          p=line.split()
          if len(p)>=3: vals.setdefault('C '+' '.join(p[:-2]),[]).append((float(p[-2]),float(p[-1])))
    res[c]=vals
  allk=[]
  for c in cfgs:
    for k in res[c]:
      if k not in allk: allk.append(k)
  print('%-34s'%'', ' '.join('%18s'%c for c in cfgs))
  for k in allk:
    row=[]
    for c in cfgs:
      v=res[c].get(k)
      if not v: row.append('%18s'%'-'); continue
      if isinstance(v[0],tuple):
        n=len(v[0]); med=[st.median([x[i] for x in v]) for i in range(n)]
        row.append('%18s'%'/'.join('%.2f'%x for x in med))
      else:
        row.append('%18s'%('%.2f'%st.median(v)))
    print('%-34s'%k[:34],' '.join(row))
