# Compares the ring kernels of the measured build (dd0342c: <K, SPLIT, S, XA=false>) with the
# branch's (<K, SPLIT, S>): SASS line by line (white space collapsed) and res-usage.
import subprocess, re, sys
CU = '/tmp/triton_whl/triton/backends/nvidia/bin/cuobjdump'
ANON = re.compile(r'\d+_GLOBAL__N__\w+?_\d+_linear_decode_cu_\w+?(?=\d+linear)')
def norm(n, fix):
    n = ANON.sub('ANON', n)
    return n.replace('ELb0EEEv', 'EEEv') if fix else n
def keep(n):
    return 'ring_kernel' in n and 'ELb1EEEv' not in n and 'ELi8E' not in n
def funcs(o, fix):
    t = subprocess.run([CU, '-sass', o], capture_output=True, text=True).stdout
    r = subprocess.run([CU, '-res-usage', o], capture_output=True, text=True).stdout
    sass = {}
    for blk in re.split(r'\n\s*Function : ', t)[1:]:
        name, body = blk.split('\n', 1)
        name = norm(name.strip(), fix)
        if keep(name):
            sass[name] = [re.sub(r'\s+', ' ', l.strip()) for l in body.split('\n') if l.strip()]
    res = {}
    for m in re.finditer(r'Function (\S+):\n(.*)', r):
        n = norm(m.group(1), fix)
        if keep(n):
            res[n] = m.group(2).strip()
    return sass, res
a, ra = funcs(sys.argv[1], True)
b, rb = funcs(sys.argv[2], False)
print('measured', len(a), 'branch', len(b))
for k in sorted(b):
    print(('SAME ' if a.get(k) == b[k] and ra.get(k) == rb.get(k) else 'DIFF ') + re.sub(r'.*ring_kernelI', '', k)[:40], rb.get(k, '')[:60])
