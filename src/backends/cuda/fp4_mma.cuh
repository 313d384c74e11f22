// Device helpers for 4-bit (MXFP4 / NVFP4) weight GEMVs on tensor cores (mma.sync m16n8k16,
// BF16 inputs, f32 accumulation): exact E2M1 -> BF16 expansion in registers and activations split
// into BF16 hi + lo parts. Included by moe_decode.cu (and any decode-path kernel of the same
// family).
//
// Fragment mapping (the k order inside an mma is free as long as A and B agree):
//  * A lane (g, c) = (lane / 4, lane % 4) reads 16 bytes (32 e2m1 values) of rows g and g + 8 at
//    element offset 32 * c of a 128-element round: a quad covers 128 consecutive k of 16 rows.
//  * Word w (8 values) of those 16 bytes expands to four BF16 pairs P_i = (v_i, v_{i+4}); mma
//    step 0 of the word takes P_0, P_1, step 1 takes P_2, P_3 (a0/a1 = P_even of rows g / g+8,
//    a2/a3 = P_odd).
//  * B lane (g, c) holds token g at the same 32 k: activations are stored "paired", per 8
//    consecutive k four u32 words X_i = bf16x2(x_i lo, x_{i+4} hi), so one 16-byte load gives
//    X_0..X_3 of a word and b0/b1 = X_even/X_odd match the A pairs.
//
// Exactness: an E2M1 nibble moved to the top of a BF16 lane and shifted right by 6 is code *
// 2^-126 (code 0.5 is the BF16 subnormal 2^-127); one BF16 multiply by a power of two or by
// an E4M3 value times a power of two makes it the dequantized weight (or a fixed power-of-two
// multiple of it) exactly, because e2m1 x e4m3 significands need at most 6 bits (BF16 has 8)
// and every intermediate stays in BF16's range. The remaining power of two and the NVFP4 global
// scale multiply the f32 accumulators.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda::fp4mma {

// d += A (16x16, row) * B (16x8, col), BF16 in, f32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// P_I of a word of 8 e2m1 values (value j in bits 4j..4j+3): BF16 pair (v_I, v_{I+4}), each
// code * 2^-126.
template <int I>
__device__ __forceinline__ uint32_t e2m1_pair(uint32_t word) {
  const uint32_t q = word << (12 - 4 * I);  // v_I to bits 15:12, v_{I+4} to bits 31:28
  return (q & 0x80008000u) | ((q >> 6) & 0x01C001C0u);
}

// Streaming 16-byte weight load (read once per launch: no L1 allocation).
__device__ __forceinline__ uint4 load_stream_16(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// BF16 bits of a power of two 2^p, p in [-126, 127] (normal range).
__device__ __forceinline__ uint32_t bf16_pow2_bits(int p) {
  return uint32_t(p + 127) << 7;
}

// MXFP4 block scale 2^(e - 127) (E8M0 byte e) folded with the 2^126 decode bias: the weight is
// (P * m1) * m2 with m1 = 2^min(e - 1, 127) and m2 = 2^(e - 128) only when e > 128 (m2 is 1.0,
// 0x3F80, otherwise; NaN for e = 255). Both as BF16x2 (same value in both halves).
struct mx_scale {
  uint32_t m1, m2;
};
__device__ __forceinline__ mx_scale mx_scale_of(uint32_t e) {
  mx_scale s;
  const uint32_t b1 = e <= 128 ? bf16_pow2_bits(int(e) - 1) : bf16_pow2_bits(127);
  const uint32_t b2 = e == 255 ? 0x7FC0u : e > 128 ? bf16_pow2_bits(int(e) - 128) : 0x3F80u;
  s.m1 = b1 | (b1 << 16);
  s.m2 = b2 | (b2 << 16);
  return s;
}

// NVFP4 block scale (E4M3 byte) times 2^118 as BF16x2 (exact: 4 significant bits, range
// 2^109..2^127); with the 2^-126 decode bias the weight comes out as code * s * 2^-8, and the
// accumulators take global * 2^8.
__device__ __forceinline__ uint32_t nv_scale_of(uint32_t e4m3_byte) {
  const float v = detail::e4m3_to_f32(e4m3_byte) * 0x1p118f;  // exact, normal f32
  const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  return b | (b << 16);
}

// The two E4M3 scales of a 16-bit word (low byte first) as nv_scale_of gives them, from one
// conversion of the pair (the same values bit for bit; one cvt and no byte extraction fewer).
__device__ __forceinline__ void nv_scale2_of(uint32_t two, uint32_t& lo, uint32_t& hi) {
  const float2 v = detail::e4m3x2_to_f32(two);  // exact
  const uint32_t a = __bfloat16_as_ushort(__float2bfloat16_rn(v.x * 0x1p118f));
  const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(v.y * 0x1p118f));
  lo = a | (a << 16);
  hi = b | (b << 16);
}

// f32 -> (hi, lo) BF16 with hi + lo = x to ~2^-17 relative (hi = rn(x), lo = rn(x - hi)).
__device__ __forceinline__ void split_bf16(float x, uint16_t& hi, uint16_t& lo) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  hi = __bfloat16_as_ushort(h);
  lo = __bfloat16_as_ushort(__float2bfloat16_rn(x - __bfloat162float(h)));
}

// Paired-layout index (in u16 units) of activation k inside a row: word (k / 8) * 4 + k % 4,
// low half for k % 8 < 4, high half otherwise.
__host__ __device__ __forceinline__ int64_t paired_u16_index(int64_t k) {
  return ((k >> 3) * 4 + (k & 3)) * 2 + ((k >> 2) & 1);
}

}  // namespace dsv4::cuda::fp4mma
