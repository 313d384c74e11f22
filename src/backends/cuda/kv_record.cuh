// Device helpers for FP8 KV records (layout: io/kv_record.h), shared by the pack / gather kernels
// (kv_record.cu) and the attention kernel that reads records (attention_decode.cu). Included by
// .cu files only.
#pragma once

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

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

}  // namespace dsv4::cuda::kv_record
