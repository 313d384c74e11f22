// Device helpers for FP8 KV records (layout: io/kv_record.h), shared by the pack / gather kernels
// (kv_record.cu) and the attention kernel that reads records (attention_decode.cu). Included by
// .cu files only.
#pragma once

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/quantize.h"

namespace dsv4::cuda::kv_record {

constexpr int64_t k_quant_block = 64;  // values per E8M0 scale

// dsv4::kv_record_layout on the device.
struct dims {
  int64_t nope, rope, rows_per_block, block_bytes;
  __host__ __device__ int64_t data_bytes() const { return nope + 2 * rope; }
  __host__ __device__ int64_t scale_count() const {
    return (nope + k_quant_block - 1) / k_quant_block;
  }
  __host__ __device__ int64_t scale_bytes() const { return (scale_count() + 7) / 8 * 8; }
  __host__ __device__ int64_t data_offset(int64_t r) const {
    return r / rows_per_block * block_bytes + r % rows_per_block * data_bytes();
  }
  __host__ __device__ int64_t scale_offset(int64_t r) const {
    return r / rows_per_block * block_bytes + rows_per_block * data_bytes() +
           r % rows_per_block * scale_bytes();
  }
  // The layout rules of kv_record.h (what the kernels rely on for aligned 2-byte stores).
  __host__ __device__ bool valid() const {
    if (nope < 0 || nope % 16 != 0 || rope < 0 || rope % 8 != 0 || nope + rope == 0 ||
        rows_per_block <= 0 || block_bytes % 8 != 0)
      return false;
    return block_bytes >= rows_per_block * (data_bytes() + scale_bytes());
  }
};

// e4m3_to_f32: exact; 0x7f / 0xff are NaN.
__device__ __forceinline__ float e4m3_value(uint32_t code) {
  const uint32_t e = (code >> 3) & 0xfu, m = code & 0x7u;
  if (e == 0xfu && m == 0x7u) return __uint_as_float(0x7fc00000u);
  const float mag =
      e == 0 ? __fmul_rn(float(m), 0x1p-9f) : __uint_as_float(((e + 127u - 7u) << 23) | (m << 20));
  return (code & 0x80u) ? -mag : mag;
}

// Two e4m3 codes (low byte first) -> f32, exactly (the hardware e4m3x2 -> f16x2 conversion: every
// e4m3 value is an f16 value; 0x7f / 0xff give NaN).
__device__ __forceinline__ float2 e4m3x2_values(uint16_t pair) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(pair), __NV_E4M3);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// e8m0_to_f32: 2^(b - 127); 0 -> 2^-127 (subnormal), 0xff -> NaN.
__device__ __forceinline__ float e8m0_value(uint32_t b) {
  if (b == 0xffu) return __uint_as_float(0x7fc00000u);
  return b == 0 ? __uint_as_float(0x00400000u) : __uint_as_float(b << 23);
}

// f32_to_bf16 bit for bit (RNE; a NaN keeps its top bits and is made quiet).
__device__ __forceinline__ uint16_t bf16_bits(float v) {
  const uint32_t u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// One 64-value scale block of a record, encoded by a whole warp (all 32 lanes call it): lane l
// holds the block's values 2l and 2l + 1 (a, b; `valid` false past the nope dims, where a = b =
// 0). The two codes go to block_data[2l] (valid lanes), the E8M0 scale byte to *scale (lane 0).
// The CPU's kv_record_encode byte for byte: exact amax (NaN ignored), s = 2^ceil(log2(max(amax,
// 1e-4) / 448)) from one IEEE division, x / s exact, then the hardware conversion
// cvt.rn.satfinite.e4m3x2.f32: round to nearest even onto the e4m3fn grid (subnormals
// included), +-448 past it, the sign of zero kept; NaN -> 0x7f whatever its sign: f32_to_e4m3
// exactly, and scale byte 0xff for a block holding a NaN (the kv_record_pack cases compare every
// byte with the CPU encoder).
__device__ __forceinline__ void encode_block_warp(float a, float b, bool valid, uint8_t* block_data,
                                                  uint8_t* scale, int lane) {
  const float amax = quant::warp_max(fmaxf(0.0f, fmaxf(fabsf(a), fabsf(b))));
  const float s = quant::fp8_block_scale(amax);
  if (valid) {
    uint32_t codes = __nv_cvt_float2_to_fp8x2(make_float2(__fdiv_rn(a, s), __fdiv_rn(b, s)),
                                              __NV_SATFINITE, __NV_E4M3);
    if (isnan(a)) codes = (codes & 0xff00u) | 0x7fu;  // any NaN -> 0x7f, as the CPU
    if (isnan(b)) codes = (codes & 0x00ffu) | 0x7f00u;
    *reinterpret_cast<uint16_t*>(block_data + 2 * lane) = uint16_t(codes);
  }
  // A block holding a NaN gets the NaN scale byte (kv_record.h), as the CPU's encoder.
  const bool nan = __any_sync(0xffffffffu, valid && (isnan(a) || isnan(b)));
  if (lane == 0) *scale = nan ? uint8_t(0xff) : uint8_t(__float_as_uint(s) >> 23);
}

}  // namespace dsv4::cuda::kv_record
