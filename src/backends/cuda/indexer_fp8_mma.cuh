// FP4 x FP4 indexer products on FP8 tensor cores (indexer_topk_fast_fp4q, indexer_topk_fast.cu):
// the FP4 keys of io/indexer_fp4_key.h and an FP4 query (hadamard_fp4's output: e2m1 codes times
// a power of two per head and 32 dims) both widened to e4m3 and multiplied with
// mma.sync.m16n8k32.e4m3 (f32 accumulation), one MMA per 32-dim scale block.
//
// Scales. A key row's four block scales 2^(e_b - 127) are folded into its e4m3 values relative to
// the row's largest, e_max: block b's code c becomes e4m3(c * 2^d_b), d_b = e_b - e_max + 6, and
// the row's products carry the common factor 2^(e_max - 133), applied to the ReLU'd head sum. For
// d_b >= -8 (blocks within 2^14 of the row's largest) every c * 2^d_b is an e4m3 value (largest
// 6 * 2^6 = 384 <= 448, smallest 0.5 * 2^-8 = 2^-9, the least e4m3 subnormal), so those products
// are exact; blocks further down round to e4m3 (nearest even; 0 below d = -12). The query is
// scaled per head by 2^-E_h with its largest magnitude in [128, 256) and rounded to e4m3: exact
// for FP4 values down to 2^-9 of that range (16 binades), and 2^E_h joins the head's weight.
// (Hadamard-rotated blocks of one vector lie within a few binades of each other.)
//
// Code -> e4m3 by byte permutes: the row and block's table lut[d_b + 13] holds the e4m3 bytes of
// the eight magnitudes c * 2^d_b; prmt picks four at a time by the codes' low three bits, and a
// second prmt with the codes' sign bits as selectors (byte 0 = 0x00, byte 1 = 0x80) adds the signs.
//
// MMA k order (any bijection of the 32 k of an MMA onto the block's dims works if A and B agree):
// lane (g, t) = (lane / 4, lane % 4) holds word w (block w) of rows g and g + 8
// (io/indexer_fp4_key.h: nibble j, j < 4, is dim 32 w + 8 (3 - j) + 2 t, nibble 4 + j its odd
// neighbour + 1). The low nibbles' bytes are A register a0 / a1 (k = 4 t + j), the high nibbles' a2
// / a3 (k = 16 + 4 t + j); the query's B registers b0 / b1 of head g hold the same dims at those k
// (q_dim below).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda::indexer_fp8 {

constexpr int k_lut_entries = 20;  // d = -13 .. 6 (below -12 every magnitude rounds to 0)
constexpr int k_lut_bias = 13;
constexpr int k_row_shift = 133;  // key value = e4m3 * 2^(e_max - 133)
// The query's fragments: 4 blocks x 32 lanes x 16 u32 (8 heads tiles x b0, b1), 16-byte chunk c of
// lane L stored at c ^ ((L >> 1) & 3) (conflict-free 16-byte loads by 8 lanes at a time).
constexpr int k_q_frag_bytes = 4 * 32 * 16 * 4;

// d += A (16x32, row) * B (32x8, col), e4m3 in, f32 accumulate.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// f32 -> e4m3 byte (round to nearest even, saturating to +-448).
__device__ __forceinline__ uint32_t e4m3_of(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return r & 0xffu;
}

// Byte `i` (0 .. 8 * k_lut_entries) of the tables: entry i / 8, magnitude code i % 8.
__device__ __forceinline__ uint32_t lut_byte(int i) {
  const int c = i % 8, e = c >> 1,
            m = c & 1;  // e2m1 magnitude: e == 0 ? m / 2 : (1 + m / 2) 2^(e-1)
  const float mag = e == 0 ? 0.5f * float(m) : ldexpf(1.0f + 0.5f * float(m), e - 1);
  return e4m3_of(ldexpf(mag, i / 8 - k_lut_bias));
}

// x * 2^k for k in [-132, 121] as two multiplies by normal powers of two (exact unless the result
// is subnormal).
__device__ __forceinline__ float scale_pow2(float x, int k) {
  const int k1 = k / 2, k2 = k - k1;
  return x * __int_as_float((k1 + 127) << 23) * __int_as_float((k2 + 127) << 23);
}

// Dim of the query fed to k slot (register r: 0 = b0, 1 = b1; byte j) of lane quad t in block w.
__device__ __forceinline__ int q_dim(int w, int t, int r, int j) {
  return 32 * w + 8 * (3 - j) + 2 * t + r;
}

// Byte offset of u32 i (0..15: head tile i / 2, register i % 2) of lane L's block-w fragments.
__device__ __forceinline__ uint32_t q_frag_offset(int w, int lane, int i) {
  const int chunk = (i / 4) ^ ((lane >> 1) & 3);
  return uint32_t(((w * 32 + lane) * 4 + chunk) * 16 + (i % 4) * 4);
}

// Per key row: the largest scale byte and the four table indices d_b + 13 (byte b, clamped at 0).
__device__ __forceinline__ uint32_t row_lut_indices(uint32_t scales, uint32_t& e_max) {
  const uint32_t m = __vmaxu4(scales, scales >> 16);
  e_max = max(m & 0xffu, (m >> 8) & 0xffu);
  uint32_t idx = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const int d = int((scales >> (8 * b)) & 0xffu) - int(e_max) + 6 + k_lut_bias;
    idx |= uint32_t(max(d, 0)) << (8 * b);
  }
  return idx;
}

// Eight codes (word of io/indexer_fp4_key.h) -> e4m3 bytes: lo = nibbles 0..3, hi = nibbles 4..7.
__device__ __forceinline__ void codes_to_e4m3(uint32_t word, uint2 lut, uint32_t& lo,
                                              uint32_t& hi) {
  const uint32_t mag = word & 0x77777777u;
  lo = __byte_perm(lut.x, lut.y, mag) | __byte_perm(0x8000u, 0u, (word >> 3) & 0x1111u);
  hi = __byte_perm(lut.x, lut.y, mag >> 16) | __byte_perm(0x8000u, 0u, (word >> 19) & 0x1111u);
}

}  // namespace dsv4::cuda::indexer_fp8
