#!/usr/bin/env python3
# Session 26 W8A8W helper: the K-split model of linear_w8a8_wgmma_default_plan fitted to the H100 sweep
# (call w8a8w r1), and the route-vs-wgmma table behind cuda_ops_linear.cpp's w8a8_wgmma_wins.
# Run from this directory: python3 2026-11-28_s26_w8a8w_ksplit_model.py
import re, math
shapes = {'fl.wq_b':(32768,1024),'fl.wo_b':(4096,8192),'fl.wq_a':(1024,4096),'fl.sh_w13':(2048,4096),'fl.sh_w2':(4096,2048),'fl.wkv':(512,4096),
'pro.wq_b':(65536,1536),'pro.wo_b':(7168,16384),'pro.wq_a':(1536,7168),'pro.sh_w13':(3072,7168),'pro.sh_w2':(7168,3072)}
meas = {}
for line in open('h100_2026-11-28_s26_w8a8w_r1_sweep.txt'):
    m = re.match(r'\s*kp-sweep (\S+)\s+T=(\d+):(.*)', line)
    if not m: continue
    name, T = m.group(1), int(m.group(2))
    for kp, t in re.findall(r'kp(\d+)\s+([\d.]+) us', m.group(3)):
        meas[(name,T,int(kp))] = float(t)
def width(T):
    for n in (16,32,48,64,96,128):
        if n >= T: return n
    return 128
def stages(n):
    st = ((16384 + n*132 + 16*2 + 1023)//1024)*1024
    return min(12, (232448-1280)//st)
def est(rows, cols, T, kp, sms=132, bw=3.0e3, L=3.7, tsplit0=2.0, tsplitn=0.025, titem=0.3):
    n = width(T); tiles = -(-rows//128); kb = cols//128
    items = tiles*kp; ctas = min(items, sms); per = -(-items//ctas)
    per_bytes = per * -(-kb//kp) * 16384
    ring = stages(n)*16384
    t_hbm = rows*cols/ (bw*1e3)  # bw in GB/s -> bytes/us = bw*1e3
    t_sm = per_bytes * L / ring
    return max(t_hbm, t_sm) + (tsplit0 + tsplitn*n if kp>1 else 0) + per*titem
tot_chosen = tot_best = 0; worst = []
for name,(rows,cols) in shapes.items():
    for T in (9,16,17,32,64,128):
        kps = [kp for kp in (1,2,4,8,16) if (name,T,kp) in meas]
        best = min(kps, key=lambda k: meas[(name,T,k)])
        ch = min(kps, key=lambda k: est(rows,cols,T,k))
        r = meas[(name,T,ch)]/meas[(name,T,best)]
        tot_chosen += meas[(name,T,ch)]; tot_best += meas[(name,T,best)]
        worst.append((r,name,T,ch,best, round(est(rows,cols,T,ch),1)))
worst.sort(reverse=True)
print("sum chosen/best", tot_chosen/tot_best)
for w in worst[:12]: print(w)

def est2(rows, cols, T, kp, P, sms=132):
    bw, L, c0, R, titem = P
    n = width(T); tiles = -(-rows//128); kb = cols//128
    items = tiles*kp; ctas = min(items, sms); per = -(-items//ctas)
    per_bytes = per * -(-kb//kp) * 16384
    ring = stages(n)*16384
    t_hbm = rows*cols/(bw*1e3)
    t_sm = per_bytes * L / ring
    t_red = (c0 + kp*128*n*4/(R*1e3)) if kp > 1 else 0
    return max(t_hbm, t_sm) + per*(t_red + titem)
def score(P):
    tc=tb=0; worst=[]
    for name,(rows,cols) in shapes.items():
        for T in (9,16,17,32,64,128):
            kps=[kp for kp in (1,2,4,8,16) if (name,T,kp) in meas]
            best=min(kps,key=lambda k: meas[(name,T,k)]); ch=min(kps,key=lambda k: est2(rows,cols,T,k,P))
            tc+=meas[(name,T,ch)]; tb+=meas[(name,T,best)]
            worst.append((round(meas[(name,T,ch)]/meas[(name,T,best)],3),name,T,ch,best))
    worst.sort(reverse=True)
    return tc/tb, worst
best=None
for bw in (2700,3000):
  for L in (3.0,3.7,4.5):
    for c0 in (0.5,1.0,2.0,3.0):
      for R in (30,60,120,240):
        for titem in (0,0.3,1.0):
          s,w=score((bw,L,c0,R,titem))
          if best is None or s<best[0]: best=(s,(bw,L,c0,R,titem),w[:8])
print(best[0], best[1]); [print(x) for x in best[2]]

P=(3000,3.0,2.0,60,0)
route={}
for f in ('h100_2026-11-28_s26_w8a8w_r1_bench_r1.txt','h100_2026-11-28_s26_w8a8w_r1_bench_r2.txt'):
    for line in open(f):
        m=re.match(r'wgmma (\S+)\s+\d+\s+\d+\s+(\d+) \| route (\S+)\s+([\d.]+) us\s+([\d.]+)%',line)
        if m:
            k=(m.group(1),int(m.group(2)))
            t=float(m.group(4))
            route[k]=(m.group(3),min(t,route.get(k,(0,1e9))[1]))
print("%-11s %4s %-14s %7s %7s %4s %6s %6s" % ("shape","T","route","route","wgmma","kp","pct","ratio"))
ceil=3069.7
for name,(rows,cols) in shapes.items():
    for T in (9,16,17,32,64,128):
        kps=[kp for kp in (1,2,4,8,16) if (name,T,kp) in meas]
        ch=min(kps,key=lambda k: est2(rows,cols,T,k,P))
        tw=meas[(name,T,ch)]
        rn,rt=route[(name,T)]
        pb=rows*cols+ -(-rows//128)*(cols//128)
        print("%-11s %4d %-14s %7.1f %7.1f %4d %5.1f%% %6.3f %s" % (name,T,rn,rt,tw,ch,100*pb/(tw*1e-6)/1e9/ceil, rt/tw, "WIN" if rt/tw>1.03 else ("loss" if rt/tw<0.97 else "tie")))
