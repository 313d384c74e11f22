#!/usr/bin/env python3
"""Searches for bit maps of the repacked E2M1 word (moe_repack.h) whose four BF16x2 pairs decode in
few instructions. A pair must have its 8 bits at P = {6,7,8,15,22,23,24,31} (sign 15/31, magnitude
8:6 / 24:22) and zeros elsewhere. Building blocks (instructions per pair):
  u & M                                1  (LOP3)
  rotl(u, r) & M                       2  (SHF + LOP3)
  (rotl(u, a) & A) | (rotl(u, b) & B)  4  (two rotations, two LOP3)
  ((u & X) * F) & M                    3  (LOP3 + IMAD + LOP3; F = sum of 2^k, the shifted copies of
                                          X pairwise disjoint within 32 bits: no carry)
Prints, for u & M plus two rotations r1 < r2 (disjoint, not meeting P), the completions of the
fourth pair: from the three existing copies only (7 instructions), by one more rotation with them
(8), by the masked multiplication with 2 or 3 copies (8), by two new rotations (9); then checks
session 43's map (r1 = 10, r2 = 13, X = 0x001B001B, F = 0x1084) on random words against the
checkpoint decode. Usage: scripts/e2m1_pair_map_search.py"""
import itertools
import random

P = [6, 7, 8, 15, 22, 23, 24, 31]
PS = set(P)
M = 0x81C081C0


def src_rot(r):
    return {(p - r) % 32 for p in P}


def rotation_pairs():
    for r1 in range(1, 32):
        s1 = src_rot(r1)
        if s1 & PS:
            continue
        for r2 in range(r1 + 1, 32):
            s2 = src_rot(r2)
            if s2 & PS or s2 & s1:
                continue
            yield r1, r2, set(range(32)) - PS - s1 - s2


def covers_by_rotations(rest, rots, used_max):
    opts = [[k for k in rots if (p - k) % 32 in rest] for p in P]
    if any(not o for o in opts):
        return None
    for pick in itertools.product(*opts):
        if {(p - k) % 32 for p, k in zip(P, pick)} == rest and len(set(pick)) <= used_max:
            return pick
    return None


def covers_by_multiply(rest, terms):
    for f in itertools.combinations(range(32), terms):
        opts = [[k for k in f if p - k >= 0 and (p - k) in rest] for p in P]
        if any(not o for o in opts):
            continue
        for pick in itertools.product(*opts):
            x = {p - k for p, k in zip(P, pick)}
            if x != rest:
                continue
            if not all(sum(1 for k in f if p - k >= 0 and (p - k) in x) == 1 for p in P):
                continue
            images = [{b + k for b in x if b + k < 32} for k in f]
            if any(images[i] & images[j] for i in range(terms) for j in range(i + 1, terms)):
                continue
            return f, pick
    return None


def main():
    counts = {"7 (existing copies)": 0, "8 (one more rotation)": 0, "8 (multiply)": 0,
              "9 (two new rotations)": 0}
    examples = {}
    for r1, r2, rest in rotation_pairs():
        if covers_by_rotations(rest, [0, r1, r2], 3):
            counts["7 (existing copies)"] += 1
        for r3 in range(1, 32):
            if r3 not in (r1, r2) and covers_by_rotations(rest, [0, r1, r2, r3], 2):
                counts["8 (one more rotation)"] += 1
        for terms in (2, 3):
            m = covers_by_multiply(rest, terms)
            if m:
                counts["8 (multiply)"] += 1
                examples.setdefault("8 (multiply)", (r1, r2) + m)
        for a, b in itertools.combinations(range(32), 2):
            if covers_by_rotations(rest, [a, b], 2):
                counts["9 (two new rotations)"] += 1
                break
    for k, v in counts.items():
        print(f"{k}: {v} maps", examples.get(k, ""))
    check_session43_map()


def check_session43_map():
    x, f = 0x001B001B, 0x1084

    def rotl(v, r):
        return ((v << r) | (v >> (32 - r))) & 0xFFFFFFFF

    def decode(u):
        return [u & M, rotl(u, 10) & M, rotl(u, 13) & M, (((u & x) * f) & 0xFFFFFFFF) & M]

    def checkpoint_pair(w, i):
        q = (w << (12 - 4 * i)) & 0xFFFFFFFF
        return (q & 0x80008000) | ((q >> 6) & 0x01C001C0)

    slot = {}
    for j in range(32):
        hits = [(i, o) for i, p in enumerate(decode(1 << j)) for o in range(32) if p >> o & 1]
        assert len(hits) == 1
        slot[hits[0]] = j
    fwd = []
    for k in range(32):
        hits = [(i, o) for i in range(4) for o in range(32) if checkpoint_pair(1 << k, i) >> o & 1]
        fwd.append(slot[hits[0]])
    assert sorted(fwd) == list(range(32))
    rng = random.Random(43)
    for _ in range(100000):
        w = rng.getrandbits(32)
        u = sum(1 << fwd[k] for k in range(32) if w >> k & 1)
        assert decode(u) == [checkpoint_pair(w, i) for i in range(4)]
    print("session 43's map decodes 100000 random words exactly; checkpoint bit -> repacked bit:", fwd)


if __name__ == "__main__":
    main()
