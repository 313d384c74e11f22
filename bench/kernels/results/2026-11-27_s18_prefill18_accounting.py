# L2 -> SM bytes per official W4A8 prefill call requested by w4a8_ws's producer (one item = tile x row block).
import random
def acct(name, T, E, K, D, I, seed=1):
    random.seed(seed)
    cnt=[0]*E
    for t in range(T):
        for e in random.sample(range(E), K): cnt[e]+=1
    tiles=[]
    for n in cnt:
        while n>0:
            tiles.append(min(n,128)); n-=min(n,128)
    P=T*K
    res={}
    for layer,(cols,rows_total,rows_item) in (('L1',(D,2*I,128)),('L2',(I,D,128))):
        rb = rows_total//rows_item   # L1: inter/64 row blocks of 64 W1 + 64 W3 rows
        rounds=cols//128
        B=sum(n*cols for n in tiles)*rb            # token rows actually read (zfill past ntok)
        TS=sum(n*4*rounds for n in tiles)*rb
        W=len(tiles)*rb*rows_item*cols//2
        WS=len(tiles)*rb*rows_item*(cols//32)*2     # per-round scale bytes + the header's emax pass
        Npad=sum((n+31)//32*32 for n in tiles)
        items=len(tiles)*rb
        flop_pad=2*Npad*rows_item*cols*rb
        res[layer]=dict(B=B,TS=TS,W=W,WS=WS,items=items,rounds=items*rounds,flop_pad=flop_pad)
    tot=sum(v['B']+v['TS']+v['W']+v['WS'] for v in res.values())
    Bt=sum(v['B']+v['TS'] for v in res.values())
    flops=2*P*3*D*I
    padf=sum(v['flop_pad'] for v in res.values())
    ns=[(n+31)//32*32 for n in tiles]
    hist={k:ns.count(k) for k in (32,64,96,128)}
    print(f"{name} T={T}: tiles {len(tiles)} N-hist {hist}; useful {flops/1e12:.3f} TFLOP, padded {padf/1e12:.3f}; "
          f"L2->SM {tot/1e9:.2f} GB (B+ts {Bt/1e9:.2f} = {100*Bt/tot:.0f}%, W {sum(v['W'] for v in res.values())/1e9:.2f}, "
          f"W scales {sum(v['WS'] for v in res.values())/1e9:.2f}); rounds {sum(v['rounds'] for v in res.values())}; "
          f"bytes/FLOP {tot/flops*1e3:.2f} B/kFLOP")
    for l,v in res.items():
        print(f"   {l}: items {v['items']} rounds {v['rounds']} B {v['B']/1e9:.2f} GB W {v['W']/1e9:.2f} GB")
    return tot, flops
for args in (("flash",4096,256,6,4096,2048),("flash",8192,256,6,4096,2048),("pro",4096,384,6,7168,3072)):
    tot,fl=acct(*args)
    # the ring-only floor measured by PREFILL11 at Flash 4096: 1934 us whole call (~1.5 ms of GEMM by its estimate)
    if args[1]==4096 and args[0]=="flash":
        for gemm_ms in (1.5,):
            print(f"   at {gemm_ms} ms of GEMM: {tot/gemm_ms/1e9:.2f} TB/s L2->SM")
        for cap in (4.0,5.0,6.0):
            print(f"   floor at {cap} TB/s: {tot/cap/1e12*1e3:.2f} ms -> with 0.43 ms non-GEMM {fl/((tot/cap/1e12)+0.43e-3)/1e12:.0f} TFLOP/s")
