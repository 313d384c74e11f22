// Register-level pieces of the W4A8 prefill core (moe_prefill_w4a8.cu): E2M1 nibbles expanded to
// E4M3 bytes with the MXFP4 group exponent folded in, and wgmma_fp8_rs (wgmma_fp8.cuh: m64nNk32
// e4m3 x e4m3 with A from registers, f32 accumulators).
//
// Folding (exact): an MXFP4 weight is code * 2^(E - 127), code in {0, .5, 1, 1.5, 2, 3, 4, 6},
// E the group's E8M0 byte. With a per-row base B (moe_prefill_w4a8.cu: B = max E of the row - 6)
// and d = E - B <= 6, code * 2^d is an E4M3 value for every code when -8 <= d <= 6 (6 * 2^6 =
// 384 <= 448; 0.5 * 2^-8 = 2^-9 is the smallest E4M3 subnormal, and every code * 2^-8 .. 2^-6 is
// a multiple of 2^-9 below 2^-6 or a normal with <= 2 significant bits). The weight is then
// e4m3 * 2^(B - 127) exactly. For d < -8 (a group more than 14 binades below its row's largest)
// the table holds code * 2^d rounded to nearest even onto the E4M3 grid (values below 2^-10 of
// the row's largest group scale become 0 or 2^-9): the only inexact case; see the header of
// moe_prefill_w4a8.cu for how often it occurs.
//
// A fragment (wgmma m64nNk32 with 8-bit A in registers, per warp of the warpgroup: rows 16 w ..
// 16 w + 15, the mma.sync m16n8k32 layout): lane (g, c) holds reg 0 = row g, k 4c .. 4c + 3;
// reg 1 = row g + 8, same k; reg 2 = row g, k 16 + 4c .. 16 + 4c + 3; reg 3 = row g + 8, same k.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/wgmma_fp8.cuh"

namespace dsv4::cuda::prefill::w4a8 {

// E4M3 bytes of code * 2^d for the 8 E2M1 magnitude codes: lo = codes 0-3 (byte i = code i),
// hi = codes 4-7. d <= 6 (the caller's base guarantees it).
struct e4m3_table {
  uint32_t lo, hi;
};

__device__ __forceinline__ e4m3_table fold_table(int d) {
  e4m3_table t;
  if (d >= -5) {
    // d = 0: {0, 0.5, 1, 1.5} = {00, 30, 38, 3C}, {2, 3, 4, 6} = {40, 44, 48, 4C}; 2^d adds d to
    // the exponent field (bits 3-6) of every non-zero entry. For -5 <= d <= 6 every field stays
    // in 1..15 without reaching 0x7F (NaN), so the byte-wise sums have no carries or borrows
    // and the 32-bit sums are exact.
    const uint32_t step = uint32_t(d * 8);
    t.lo = 0x3C383000u + step * 0x01010100u;
    t.hi = 0x4C484440u + step * 0x01010101u;
  } else {
    // E4M3 subnormals (d = -6 .. -8 exact) and below (rounded): the conversion instruction.
    const float s = ldexpf(1.0f, d);
    const auto pack = [&](float a, float b) {  // a -> low byte
      return uint32_t(
          __nv_cvt_float2_to_fp8x2(make_float2(a * s, b * s), __NV_SATFINITE, __NV_E4M3));
    };
    t.lo = pack(0.0f, 0.5f) | (pack(1.0f, 1.5f) << 16);
    t.hi = pack(2.0f, 3.0f) | (pack(4.0f, 6.0f) << 16);
  }
  return t;
}

__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// A word of 8 E2M1 values (value j in bits 4j .. 4j + 3, sign in bit 4j + 3) as E4M3 bytes
// through table t: lo = values 0-3 (byte i = value i), hi = values 4-7.
// Magnitudes: one byte permute of the table with the 3-bit codes as selectors; one mask serves
// both halves, as prmt reads only its selector's low 16 bits (session 16, PREFILL11: one
// instruction less per word than a mask per half). Signs: a byte permute in sign-replicate mode
// (selector bit 3) of (w << 4, w), whose bytes have the signs of values (0, 2, 4, 6) and
// (1, 3, 5, 7) in their top bits, gives 0xFF / 0x00 per output byte.
__device__ __forceinline__ void expand_e2m1x8(uint32_t w, const e4m3_table& t, uint32_t& lo,
                                              uint32_t& hi) {
  const uint32_t m = w & 0x77777777u, w4 = w << 4;
  // Sign bytes 0, 4, 1, 5 of (w << 4, w): values 0..3; bytes 2, 6, 3, 7: values 4..7.
  lo = prmt(t.lo, t.hi, m) | (prmt(w4, w, 0xD9C8u) & 0x80808080u);
  hi = prmt(t.lo, t.hi, m >> 16) | (prmt(w4, w, 0xFBEAu) & 0x80808080u);
}

template <int N>
using wgmma_fp8_rs = wgmma::fp8_rs<N>;

}  // namespace dsv4::cuda::prefill::w4a8
