#!/usr/bin/env python3
# IDX34 (session 22): summary of h200_2026-11-27_s22_idx34_run1_logs.tgz (extracted into the
# directory given as the argument): plan medians, chained per-call rows, and the top-512 / 1024
# trace distributions (first / median / last CTA, medians over the config's processes).
import re,sys,statistics as st,glob
D=sys.argv[1].rstrip('/')+'/'
cfgs="base new d0 d1 d2 d3 d4 d5 d6 d7".split()
keys=["score loop end (1)","score flush issued (7)","score snapshot ok (3)","score listed (4)","score end (2)","select wait done (1)","select F (3)","select end (4)"]
for topk in ("512","1024"):
  print(f"top-{topk}: first/median/last CTA, medians over processes (us after first score CTA entry)")
  print("cfg  "+" | ".join(k.replace("score ","").replace("select ","sel ") for k in keys)+" | last-CTA: loop,flush,snap,listed | listed | tries")
  for c in cfgs:
    txt=open(D+f"bench_{c}.txt").read()
    blocks=re.split(r"indexer phase trace, T=1 entries=262144 top_k=(\d+):",txt)
    vals={k:[] for k in keys}; last={k:[] for k in ["loop end","flush issued","snapshot ok","listed"]}; listed=[]; tries=[]
    for i in range(1,len(blocks),2):
      if blocks[i]!=topk: continue
      b=blocks[i+1].split("trace collect launch")[0]
      for k in keys:
        m=re.search(re.escape(k)+r"\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)",b)
        if m: vals[k].append(tuple(float(x) for x in m.groups()))
      for k in last:
        m=re.search(r"\n\s+"+k+r"\s+([-\d.na]+)\s+([-\d.na]+)",b)
        if m: last[k].append(float(m.group(1)))
      m=re.search(r"listed candidates (\d+)",b); 
      if m: listed.append(int(m.group(1)))
      m=re.search(r"tries: median CTA ([\d.]+), max CTA ([\d.]+)",b)
      if m: tries.append(m.group(1)+"/"+m.group(2))
    def f(v): 
      if not v: return "-"
      return "/".join(f"{st.median([x[j] for x in v]):.2f}" for j in range(3))
    print(f"{c:5}"+" | ".join(f(vals[k]) for k in keys)+" | "+",".join(f"{st.median(last[k]):.2f}" for k in last)+f" | {sorted(listed)} | {tries}")

print("plan rows (fp4 plan, medians of the config's rows [min-max]) and chained per call (each process)")
chain=open(D+"chain.txt").read().split("== chain ")[1:]
for c in cfgs:
    txt=open(D+f"bench_{c}.txt").read()
    row=[]
    for k in ("512","1024"):
        v=sorted(float(m) for m in re.findall(r"^  fp4 plan.*top_k="+k+r" +([\d.]+)",txt,re.M))
        row.append(f"top-{k} {st.median(v):.2f} [{v[0]:.2f}-{v[-1]:.2f}] n={len(v)}")
    ch=[re.findall(r"per call ([\d.]+) us",b) for b in chain if b.split()[0]==c]
    print(f"{c:5} "+"; ".join(row)+" | chained 512/1024: "+", ".join("/".join(x) for x in ch))
