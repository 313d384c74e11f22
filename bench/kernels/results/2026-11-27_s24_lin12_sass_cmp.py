#!/usr/bin/env python3
# LIN12: per-kernel SASS comparison of linear_decode objects / binaries whose kernel names differ by the
# x_lead / late-scale template arguments (dropped when 0 / false before comparing), as
# scripts/sass_kernel_diff.py does for unchanged names. Usage: BEFORE AFTER (objects or executables).
import subprocess,sys,re
CU="/tmp/triton_whl/triton/backends/nvidia/bin/cuobjdump"
def sass(o):
    t=subprocess.run([CU,"-sass",o],capture_output=True,text=True).stdout
    out={};cur=None
    for line in t.splitlines():
        m=re.match(r"\s*Function : (\S+)",line)
        if m:
            cur=m.group(1) if "linear_decode" in m.group(1) and "prepare" not in m.group(1) else None
            if cur: out[cur]=[]
            continue
        if cur is not None:
            l=re.sub(r"/\*[0-9a-f]{4}\*/","",line); l=re.sub(r"/\* 0x[0-9a-f]+ \*/","",l)
            l=" ".join(l.split())
            if l: out[cur].append(l)
    return out
def norm(n):
    n=re.sub(r"\d+_GLOBAL__N__\w+?(?=25linear|20linear|28linear)","ANON",n)
    n=n.replace("ELb0EEEv","EEEv")   # drop LS=false
    n=n.replace("ELi0EEEv","EEEv")   # drop XL=0
    return n
b={norm(k):v for k,v in sass(sys.argv[1]).items()}
a={norm(k):v for k,v in sass(sys.argv[2]).items()}
same=diff=0
for k in sorted(a):
    if k in b:
        if a[k]==b[k]: same+=1
        else: diff+=1; print("DIFF",k)
    else: print("NOT IN BEFORE",k)
print("same",same,"diff",diff,"before-only",len([k for k in b if k not in a]))
