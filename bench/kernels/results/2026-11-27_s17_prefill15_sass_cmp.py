import subprocess,sys,re
def norm(s): return re.sub(r'\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}','ANON',s)
def funcs(path):
    out=subprocess.run(['cuobjdump','-sass',path],capture_output=True,text=True).stdout
    fs={};cur=None
    for l in out.split('\n'):
        m=re.match(r'\s+Function : (\S+)',l)
        if m: cur=norm(m.group(1)); fs[cur]=[]; continue
        if cur:
            m=re.match(r'\s+/\*[0-9a-f]{4,}\*/\s+(.*?);',l)
            if m: fs[cur].append(norm(re.sub(r'\s+',' ',m.group(1))))
    return fs
a=funcs(sys.argv[1]); b=funcs(sys.argv[2])
same=[k for k in a if k in b and a[k]==b[k]]; diff=[k for k in a if k in b and a[k]!=b[k]]
print('main kernels',len(a),'branch kernels',len(b),'identical',len(same),'differ',len(diff),'missing',len([k for k in a if k not in b]),'new',len([k for k in b if k not in a]))
for k in diff: print('DIFF',k)
