# Session 26 W8A8W2 helper: linear_w8a8_wgmma_default_plan's K split (model of 2026-11-28_s26_w8a8w_ksplit_model.py,
# read rate 0.9 x peak: H100 3017, H200 4425 GB/s) scored against the H100 sweep (w8a8w r1) and the H200 reduce-0 sweep
# (w8a8w2 r1): measured time at the model's pick / the best measured K split; then two small grid refits (neither adopted).
import re, itertools
R=''  # run from bench/kernels/results
shapes = {'fl.wq_b':(32768,1024),'fl.wo_b':(4096,8192),'fl.wq_a':(1024,4096),'fl.sh_w13':(2048,4096),'fl.sh_w2':(4096,2048),'fl.wkv':(512,4096),
'pro.wq_b':(65536,1536),'pro.wo_b':(7168,16384),'pro.wq_a':(1536,7168),'pro.sh_w13':(3072,7168),'pro.sh_w2':(7168,3072)}
h100={}
for line in open(R+'h100_2026-11-28_s26_w8a8w_r1_sweep.txt'):
    m=re.match(r'\s*kp-sweep (\S+)\s+T=(\d+):(.*)',line)
    if m and int(m.group(2))<=64:
        for kp,t in re.findall(r'kp(\d+)\s+([\d.]+) us',m.group(3)): h100[(m.group(1),int(m.group(2)),int(kp))]=float(t)
h200={}
for line in open(R+'h200_2026-11-28_s26_w8a8w2_r1_floor.txt'):
    m=re.match(r'\s*sweep (\S+)\s+T=(\d+):(.*)',line)
    if m:
        for kp,t in re.findall(r'r0kp(\d+) ([\d.]+)',m.group(3)): h200[(m.group(1),int(m.group(2)),int(kp))]=float(t)
devs={'H100':(h100,3017.0),'H200':(h200,4425.0)}
def width(T):
    for n in (16,32,48,64):
        if n>=T: return n
def stages(n):
    st=((16384+n*132+32+1023)//1024)*1024
    return min(12,(232448-1280)//st)
def est(rows,cols,T,kp,bw,P,sms=132):
    L,c0,Rr,titem=P
    n=width(T); tiles=-(-rows//128); kb=cols//128
    items=tiles*kp; per=-(-items//min(items,sms))
    cta=per*-(-kb//kp)*16384
    t=max(rows*cols/(bw*1e3), cta*L/(stages(n)*16384))
    return t+per*(((c0+kp*128*n*4/(Rr*1e3)) if kp>1 else 0)+titem)
def pick(rows,cols,T,bw,P,kps):
    best=None
    for kp in (1,2,4,8,16):
        if kp>cols//128: break
        t=est(rows,cols,T,kp,bw,P)
        if best is None or t<best[0]: best=(t,kp)
    return best[1]
def score(P,verbose=False):
    out={}
    for d,(meas,bw) in devs.items():
        tc=tb=0; worst=[]
        for name,(rows,cols) in shapes.items():
            for T in (9,16,17,32,64):
                kps=[k for k in (1,2,4,8,16) if (name,T,k) in meas]
                if not kps: continue
                b=min(kps,key=lambda k: meas[(name,T,k)]); c=pick(rows,cols,T,bw,P,kps)
                tc+=meas[(name,T,c)]; tb+=meas[(name,T,b)]
                worst.append((round(meas[(name,T,c)]/meas[(name,T,b)],3),name,T,c,b))
        worst.sort(reverse=True); out[d]=(tc/tb,worst)
    return out
cur=(3.0,2.0,60,0)
s=score(cur)
for d in s: print('current',d,round(s[d][0],4),s[d][1][:8])
best=None
for L in (2.0,2.5,3.0,3.5,4.0):
  for c0 in (0.5,1.0,1.5,2.0,2.5,3.0):
    for Rr in (30,45,60,90,120):
      for titem in (0,0.3):
        s=score((L,c0,Rr,titem)); tot=s['H100'][0]+s['H200'][0]; mx=max(s['H100'][1][0][0],s['H200'][1][0][0])
        key=(tot,mx)
        if best is None or key<best[0]: best=(key,(L,c0,Rr,titem),s)
print('best',best[0],best[1])
for d in best[2]: print(d,round(best[2][d][0],4),best[2][d][1][:8])
print('--- extended: + c1 per extra part')
def est(rows,cols,T,kp,bw,P,sms=132):
    L,c0,Rr,titem,c1=P
    n=width(T); tiles=-(-rows//128); kb=cols//128
    items=tiles*kp; per=-(-items//min(items,sms))
    cta=per*-(-kb//kp)*16384
    t=max(rows*cols/(bw*1e3), cta*L/(stages(n)*16384))
    return t+per*(((c0+c1*(kp-1)+kp*128*n*4/(Rr*1e3)) if kp>1 else 0)+titem)
best=None
for L in (2.0,2.5,3.0,3.5):
  for c0 in (0.5,1.0,1.5,2.0,2.5):
    for Rr in (30,60,90,120,240):
      for c1 in (0,0.1,0.2,0.3,0.4,0.6):
        s=score((L,c0,Rr,0,c1)); tot=s['H100'][0]+s['H200'][0]; mx=max(s['H100'][1][0][0],s['H200'][1][0][0])
        key=(round(mx,3),tot)
        if best is None or key<best[0]: best=(key,(L,c0,Rr,0,c1),s)
print('best by worst',best[0],best[1])
for d in best[2]: print(d,round(best[2][d][0],4),best[2][d][1][:8])
