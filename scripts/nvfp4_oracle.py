#!/usr/bin/env python3
"""Independent oracle for dsv4's NVFP4 quantizer (src/io/nvfp4_quantizer.h), numpy only.

Writes tests/fixtures/nvfp4/oracle.safetensors: for each case, the input and the expected
NVFP4 encoding computed here from the documented rules, by code that shares nothing with the C++:

  g  = float32(max(amax, 1e-8)) / float32(2688)                       (f32 division)
  s  = e4m3 nearest-even of float32(float32(amax16 / g) / 6), saturating at 448; decoded from the
       bit layout (not from a table shared with the engine)
  code = argmin over the 8 magnitudes of |x| - float32(float32(e2m1 * s) * g) (float64 distances),
       exact ties to the even code, +0 for zero; s == 0 -> all codes 0

and the MXFP4 -> NVFP4 conversion (g = 2^(emax - 8); half-groups keep codes with s = 2^(e - emax + 8)
when that is >= 2^-9; zero half-groups get s = 0; others are requantized by the rules above).

Usage: /opt/oracle/bin/python scripts/nvfp4_oracle.py [--out tests/fixtures/nvfp4/oracle.safetensors]
Deterministic (fixed seed; sorted header): rerunning reproduces the file byte for byte.
"""
import argparse
import json
import os

import numpy as np

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float64)


def e4m3_decode(byte):
    """Value of an e4m3fn byte (sign ignored: callers pass non-negative codes)."""
    e, m = (byte >> 3) & 0xF, byte & 0x7
    if e == 0:
        return m / 8.0 * 2.0 ** -6
    return (1.0 + m / 8.0) * 2.0 ** (e - 7)


E4M3_POS = np.array([e4m3_decode(b) for b in range(0x7F)])  # 0x7f is NaN


def e4m3_encode(v):
    """Nearest e4m3 code of v >= 0, ties to the even code, saturating at 448 (code 0x7e)."""
    v = float(v)
    if v >= 448.0:
        return 0x7E
    d = np.abs(E4M3_POS - v)
    best = np.flatnonzero(d == d.min())
    even = [b for b in best if b % 2 == 0]
    return int(even[0] if even else best[0])


def f32(x):
    return np.float32(x)


def quantize(x, g):
    """x float32 [rows, cols] -> (codes uint8 [rows, cols], scales uint8 [rows, cols/16])."""
    rows, cols = x.shape
    codes = np.zeros((rows, cols), np.uint8)
    scales = np.zeros((rows, cols // 16), np.uint8)
    for r in range(rows):
        for b in range(cols // 16):
            blk = x[r, b * 16:(b + 1) * 16]
            amax = f32(np.max(np.abs(blk)))
            s = e4m3_encode(f32(f32(amax / g) / f32(6.0)))
            scales[r, b] = s
            if s == 0:
                continue
            sv = f32(E4M3_POS[s])
            d = np.array([f32(f32(f32(m) * sv) * g) for m in E2M1], dtype=np.float64)
            for i, v in enumerate(blk):
                dist = np.abs(abs(float(v)) - d)
                best = np.flatnonzero(dist == dist.min())
                even = [c for c in best if c % 2 == 0]
                c = int(even[0] if even else best[0])
                if c != 0 and v < 0:
                    c |= 8
                codes[r, b * 16 + i] = c
    return codes, scales


def global_scale(x):
    return f32(max(f32(np.max(np.abs(x))), f32(1e-8))) / f32(2688.0)


def pack(codes):
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def convert_mxfp4(codes, e8m0):
    """codes uint8 [rows, cols] (unpacked), e8m0 uint8 [rows, cols/32] -> (codes, scales, g, exact)."""
    rows, cols = codes.shape
    nz = [(r, gi) for r in range(rows) for gi in range(cols // 32)
          if np.any(codes[r, gi * 32:(gi + 1) * 32] & 7)]
    emax = max(int(e8m0[r, gi]) - 127 for r, gi in nz) if nz else None
    k = emax - 8 if nz else 0
    g = f32(2.0 ** k)
    out_codes = codes.copy()
    scales = np.zeros((rows, cols // 16), np.uint8)
    exact = np.ones((rows, cols // 16), np.uint8)
    for r in range(rows):
        for b in range(cols // 16):
            e = int(e8m0[r, b // 2]) - 127
            half = codes[r, b * 16:(b + 1) * 16]
            if not np.any(half & 7):
                out_codes[r, b * 16:(b + 1) * 16] = 0
                continue
            shift = e - k
            if shift >= -9:
                scales[r, b] = e4m3_encode(2.0 ** shift)
                assert E4M3_POS[scales[r, b]] == 2.0 ** shift
                continue
            vals = np.array([(-1 if c & 8 else 1) * E2M1[c & 7] * 2.0 ** e for c in half], np.float32)
            c2, s2 = quantize(vals.reshape(1, 16), g)
            out_codes[r, b * 16:(b + 1) * 16] = c2[0]
            scales[r, b] = s2[0, 0]
            sv = E4M3_POS[s2[0, 0]]
            deq = [(-1 if c & 8 else 1) * f32(f32(E2M1[c & 7] * sv) * g) for c in c2[0]]
            exact[r, b] = int(all(float(a) == float(v) for a, v in zip(deq, vals)))
    return out_codes, scales, g, exact


def cases(rng):
    out = {}
    # Gaussian rows whose 16-blocks span 2^-14 .. 2^2: normal, subnormal and underflowing scales.
    x = rng.standard_normal((12, 96)).astype(np.float32)
    x *= (2.0 ** rng.integers(-14, 3, size=(12, 6))).repeat(16, axis=1).astype(np.float32)
    x[3, 16:32] = 0.0                     # an all-zero block
    x[5, :] = 0.0                         # an all-zero row
    x[7, 32:48] = np.float32(1e-30)       # a block far below the smallest block scale
    x[0, 0] = np.float32(-7.5)            # the tensor amax (negative)
    out["gaussian"] = x
    # Exact ties: amax 2688 gives g = 1; each block holds 6 * s (its amax) and the midpoints
    # between neighbouring magnitudes times s, with both signs.
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 2.6, 3.6, 5.1, 2.75, 3.75, 5.25, 0.1],
                    np.float64)
    rows = []
    amax_block = np.zeros(16)
    amax_block[0] = 2688.0  # the tensor amax: g = 2688 / 2688 = 1 exactly
    for s in (1.0, 0.5, 2.0 ** -6, 64.0):
        blk = np.concatenate([[6.0], mids, [-1.25]]) * s
        rows.append(np.concatenate([blk, -blk, amax_block]))
    out["ties"] = np.array(rows, np.float32)
    return out


def mxfp4_case(rng):
    rows, cols = 6, 128
    codes = rng.integers(0, 16, size=(rows, cols)).astype(np.uint8)
    e8 = (127 + rng.integers(-6, 3, size=(rows, cols // 32))).astype(np.uint8)
    e8[1, 0] = 127 + 2 - 17      # exactly at the limit emax - 17 (exact)
    e8[1, 1] = 127 + 2 - 18      # one binade beyond (requantized)
    e8[2, 2] = 127 + 2 - 30      # far beyond
    codes[3, 0:16] = 8           # a half-group of -0 codes
    codes[4, 32:64] = 0          # an all-zero group with the largest exponent
    e8[4, 1] = 127 + 20
    e8[0, 3] = 127 + 2           # the largest exponent of a nonzero group: emax = 2
    codes[0, 96] = 7
    return codes, e8


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": {k: metadata[k] for k in sorted(metadata)}}, [], 0
    for name in sorted(tensors):
        dt, arr = tensors[name]
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(hj).to_bytes(8, "little"))
        f.write(hj)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/nvfp4/oracle.safetensors")
    args = ap.parse_args()
    rng = np.random.default_rng(5005)
    tensors = {}
    for name, x in cases(rng).items():
        g = global_scale(x)
        codes, scales = quantize(x, g)
        tensors[f"{name}.input"] = ("F32", x)
        tensors[f"{name}.codes"] = ("U8", pack(codes))
        tensors[f"{name}.scales"] = ("F8_E4M3", scales)
        tensors[f"{name}.global_scale"] = ("F32", np.array([g], np.float32))
    codes, e8 = mxfp4_case(rng)
    nc, ns, g, exact = convert_mxfp4(codes, e8)
    tensors["mxfp4.source_codes"] = ("U8", pack(codes))
    tensors["mxfp4.source_scales"] = ("F8_E8M0", e8)
    tensors["mxfp4.codes"] = ("U8", pack(nc))
    tensors["mxfp4.scales"] = ("F8_E4M3", ns)
    tensors["mxfp4.global_scale"] = ("F32", np.array([g], np.float32))
    tensors["mxfp4.exact_blocks"] = ("U8", exact)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_safetensors(args.out, tensors, {"generator": "scripts/nvfp4_oracle.py", "seed": "5005"})
    print(f"wrote {args.out}: {len(tensors)} tensors; mxfp4 g = {g}, "
          f"exact blocks {int(exact.sum())}/{exact.size}")


if __name__ == "__main__":
    main()
