# Session 47: a rough model of the Flash MXFP4 T = 4 decode call (H200), for weighing W1/W3 grid shapes.
# Blocks share their SM's streaming rate (33 KB/us, l45f's first W1/W3 wave) while they stream; fixed latencies
# before and after (prologue, W2's wait + staging, epilogues, fold, combine) from the l45f traces. Calibrated on
# the current grid only (it gives 87.1 us against 86.4-87.7 measured); it misses per-block costs of finer grids
# (W1/W3 at RT 2: model 85.1 us, measured 0.98-0.99x of RT 4), so its stream-K figure is an upper bound.
# Usage: python3 2026-11-30_s47_decode_sim.py
import heapq, random, sys
def sim(w13_blocks, w13_work, w2_blocks_per_slot, w2_work, slots, rate=33.0, slots_per_sm=4, sms=132,
        L13=1.5, E13=2.0, L2=2.0, E2=0.4, fold=1.0, comb=2.5, dt=0.02, order_w13=None):
    # work in KB; rate KB/us per SM shared by blocks in their streaming phase
    blocks13 = order_w13 or [(s, w13_work) for s in range(slots) for _ in range(w13_blocks // slots)]
    pend13 = list(blocks13); pend2 = [(s, w2_work) for s in range(slots) for _ in range(w2_blocks_per_slot)]
    left13 = {s: sum(1 for b in blocks13 if b[0] == s) for s in range(slots)}
    ready_at = {}
    sm = [[] for _ in range(sms)]  # each: dict(kind, slot, phase, t_left/work_left)
    t = 0.0; done2 = 0; n2 = len(pend2)
    while True:
        # dispatch
        for i in range(sms):
            while len(sm[i]) < slots_per_sm and (pend13 or pend2):
                if pend13:
                    s, w = pend13.pop(0); sm[i].append(['13', s, 'lat', L13, w])
                else:
                    s, w = pend2.pop(0); sm[i].append(['2', s, 'wait', L2, w])
        # advance
        for i in range(sms):
            streaming = [b for b in sm[i] if b[2] == 'work']
            share = rate * dt / max(1, len(streaming))
            keep = []
            for b in sm[i]:
                if b[2] == 'lat':
                    b[3] -= dt
                    if b[3] <= 0: b[2] = 'work'
                elif b[2] == 'wait':  # W2: needs slot ready, then latency L2
                    if b[1] in ready_at and t >= ready_at[b[1]]:
                        b[3] -= dt
                        if b[3] <= 0: b[2] = 'work'
                elif b[2] == 'work':
                    b[4] -= share
                    if b[4] <= 0: b[2] = 'epi'; b[3] = E13 if b[0] == '13' else E2
                elif b[2] == 'epi':
                    b[3] -= dt
                    if b[3] <= 0:
                        if b[0] == '13':
                            left13[b[1]] -= 1
                            if left13[b[1]] == 0: ready_at[b[1]] = t + fold
                        else:
                            done2 += 1
                        continue
                keep.append(b)
            sm[i] = keep
        t += dt
        if done2 == n2 and not any(sm): return t + comb
slots = 22
base = sim(704, 272, 64, 68, slots)
print('current model (RT4, 704 W1/W3 blocks):', round(base, 1))
# balanced: 528 W1/W3 blocks carrying all the W1/W3 work (stream-K), slot-major, +0.5 us fold
w = 704 * 272 / 528
order = []
per_slot = 704 // slots
# assign work in slot-major order to 528 equal blocks; each block tagged with the last slot it touches
acc = 0.0; cur = 0
import math
for b in range(528):
    start = b * w; end = (b + 1) * w
    s_last = min(slots - 1, int((end - 1e-9) // (per_slot * 272)))
    order.append((s_last, w))
print('stream-K model (528 equal W1/W3 blocks):', round(sim(528, w, 64, 68, slots, order_w13=order, fold=1.5), 1))
print('RT2 model (1408 W1/W3 blocks):', round(sim(1408, 136, 64, 68, slots), 1))
