// Quantize-dequantize kernels of the official precision mode (docs/dsv4-model.md §3.7), f32 in
// place. Semantics are those of ops::fake_quant_fp8_act, fake_quant_kv_fp8, hadamard_fp4 and
// hadamard_fp4_rows (model/ops.h); the CPU backend (backends/cpu/quantize.cpp) is the reference
// and these kernels reproduce it bit for bit: the block maxima are exact, the scales are powers of
// two, x / s and q * s are exact, the element casts round to nearest even with the same
// saturation, and the Hadamard runs the CPU's butterflies (each output of a stage is one f32 add
// or subtract of the same two inputs) and the same f32 normalising product.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// act_t (both functions): float or __nv_bfloat16. Values are quantized from f32 and stored in
// act_t; every e4m3 / e2m1 value times its power-of-two scale is exact in bf16 (8 significant
// bits, f32's exponent range), so bf16 storage holds the quantized values exactly.

// Largest head_dim hadamard_fp4_rows accepts (one warp holds a vector in shared memory).
constexpr int64_t k_hadamard_max_dim = 4096;

// For i < count, row r = rows ? rows[i] : i (r < 0 or r >= row_limit skipped; row_limit is
// ignored without a row list; the CPU backend throws on a row past the pool): the first n values of
// base[r * row_stride ...] are FP8 e4m3 quantize-dequantized in blocks of `block` consecutive
// values (the last block of a row may be shorter), s = 2^ceil(log2(max(amax, 1e-4) / 448)).
// One warp per (row, block); no host synchronisation.
template <typename act_t>
cudaError_t fake_quant_fp8_rows(act_t* base, int64_t row_stride, const int32_t* rows,
                                int64_t row_limit, int64_t count, int64_t n, int64_t block,
                                cudaStream_t stream);

// For i < count, row r = rows ? rows[i] : i (skipped as above), each of the `heads` vectors of
// head_dim values at base[r * row_stride + h * head_dim]: Walsh-Hadamard transform times `norm`
// (the caller passes float(1 / sqrt(double(head_dim))), as the CPU computes it), then FP4 e2m1
// quantize-dequantize in blocks of 32, s = 2^ceil(log2(max(amax, 6 * 2^-126) / 6)). head_dim a
// power of two <= k_hadamard_max_dim. One warp per vector.
template <typename act_t>
cudaError_t hadamard_fp4_rows(act_t* base, int64_t row_stride, const int32_t* rows,
                              int64_t row_limit, int64_t count, int64_t heads, int64_t head_dim,
                              float norm, cudaStream_t stream);

}  // namespace dsv4::cuda

#ifdef __CUDACC__
#include "backends/cuda/activation.cuh"

// Device helpers, shared with moe.cu (the official expert order quantizes h there).
namespace dsv4::cuda::quant {

// 2^ceil(log2(v)) for v > 0 normal or +inf, clamped to 2^127 (= f32_to_e8m0_ceil then
// e8m0_to_f32 on the CPU, for the inputs the quantizers produce: v >= 2^-126).
__device__ __forceinline__ float pow2_ceil(float v) {
  const uint32_t b = __float_as_uint(v);
  const int e = int((b >> 23) & 0xffu);
  int k = e - 127 + ((b & 0x7fffffu) != 0u ? 1 : 0);
  k = k > 127 ? 127 : (k < -126 ? -126 : k);
  return __uint_as_float(uint32_t(k + 127) << 23);
}

// e4m3_to_f32(f32_to_e4m3(y)): round to nearest even onto the e4m3fn grid, saturating at +-448;
// NaN stays NaN, the sign of zero is kept.
__device__ __forceinline__ float e4m3_round(float y) {
  if (isnan(y)) return y;
  const float a = fabsf(y);
  float r;
  if (a >= 448.0f) {
    r = 448.0f;
  } else if (a < 0x1p-6f) {
    r = __fmul_rn(rintf(__fmul_rn(a, 512.0f)), 0x1p-9f);  // subnormal grid, step 2^-9
  } else {
    const int e = ilogbf(a);
    const float m = ldexpf(a, -e);                               // [1, 2), exact
    const float q = rintf(__fmul_rn(__fsub_rn(m, 1.0f), 8.0f));  // 3 mantissa bits; 8 carries
    r = ldexpf(__fadd_rn(1.0f, __fmul_rn(q, 0.125f)), e);
  }
  return copysignf(r, y);
}

// The same value in integer steps (no ilogbf / ldexpf / rintf): round to nearest even to 3
// mantissa bits on the bit pattern, the subnormal grid by the 2^23 trick. Equal to e4m3_round for
// every f32 y (host, all 2^32 inputs: bench/kernels/results/2026-11-27_s20_moe24_e4m3_check.*).
// Used where the value (not the code) is wanted: the decode MoE's fold of h
// (moe_decode_quantize.cuh).
__device__ __forceinline__ float e4m3_round_bits(float y) {
  const uint32_t b = __float_as_uint(y), a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return y;  // NaN
  uint32_t r;
  if (a >= 0x43e00000u) {  // >= 448 (inf included): saturate
    r = 0x43e00000u;
  } else if (a < 0x3c800000u) {  // < 2^-6: the subnormal grid, step 2^-9 (rint by 2^23)
    const float t = __fmul_rn(__uint_as_float(a), 512.0f);
    r = __float_as_uint(__fmul_rn(__fsub_rn(__fadd_rn(t, 0x1p23f), 0x1p23f), 0x1p-9f));
  } else {  // 3 mantissa bits, round to nearest even (a carry moves into the exponent)
    r = (a + 0x7ffffu + ((a >> 20) & 1u)) & 0xfff00000u;
  }
  return __uint_as_float(r | (b & 0x80000000u));
}

// e4m3(lo) | e4m3(hi) << 8 (the codes of e4m3_round's values) by cvt.rn.satfinite.e4m3x2.f32, one
// instruction per two values: equal to e4m3_round then the exact cast for every f32 input
// (bench_moe_linear --fp8-check, all 2^32 inputs; session 20 PREFILL20). Used where the code is
// wanted (the prefill's W4A8 x / h, moe_prefill_w4a8.cu) or where the value goes on through
// kv_record::e4m3x2_values (the W4A16 h' quantize, moe_prefill_wgmma_ws.cu).
__device__ __forceinline__ uint32_t e4m3x2_bits(float lo, float hi) {
  return uint32_t(__nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3));
}

// The scale of an FP8 block (fp8_block_warp's): 2^ceil(log2(max(amax, 1e-4) / 448)). Dividing by
// it equals multiplying by __fdiv_rn(1, s), exactly: s = 2^k with k in [-126, 127], so 1 / s is
// exact (2^-127 a subnormal, not flushed in this build) and both round the same quotient.
__device__ __forceinline__ float fp8_block_scale(float amax) {
  return pow2_ceil(__fdiv_rn(fmaxf(amax, 1e-4f), 448.0f));
}

// e2m1_to_f32(f32_to_e2m1(y)): round to nearest even onto {0, 0.5, 1, 1.5, 2, 3, 4, 6},
// saturating at +-6; NaN -> +6 (e2m1 has no NaN), the sign of zero is kept.
__device__ __forceinline__ float e2m1_round(float y) {
  if (isnan(y)) return 6.0f;
  const float a = fabsf(y);
  float r;
  if (a >= 6.0f)
    r = 6.0f;
  else if (a < 2.0f)
    r = __fmul_rn(rintf(__fmul_rn(a, 2.0f)), 0.5f);  // step 0.5 (codes 0-4)
  else if (a < 4.0f)
    r = rintf(a);  // step 1 (codes 4-6)
  else
    r = __fmul_rn(rintf(__fmul_rn(a, 0.5f)), 2.0f);  // step 2 (codes 6-7)
  return copysignf(r, y);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// One 128-value FP8 block of activations by one warp, 4 consecutive values a lane at x4 (all 32
// lanes call it): the lane's 4 E4M3 codes (value 0 in bits 0-7), and the block's scale in `scale`
// (fake_quant_fp8_act's rule: x / s rounded to E4M3, s = fp8_block_scale of the amax, NaN ignored).
template <typename T>
__device__ __forceinline__ uint32_t fp8_block_codes_warp(const T* x4, float& scale) {
  float v[4];
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[j] = act_to_f32(x4[j]);
    amax = fmaxf(amax, fabsf(v[j]));
  }
  scale = fp8_block_scale(warp_max(amax));
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = __fdiv_rn(v[j], scale);  // exact: scale is a power of two
  return e4m3x2_bits(v[0], v[1]) | (e4m3x2_bits(v[2], v[3]) << 16);
}

// FP8 quantize-dequantize of v[0:n] (f32 or bf16 storage) by one warp (all 32 lanes call it),
// one scale for the n values (the caller splits rows into blocks).
template <typename T>
__device__ __forceinline__ void fp8_block_warp(T* v, int64_t n) {
  const int lane = threadIdx.x % 32;
  float amax = 0.0f;
  for (int64_t i = lane; i < n; i += 32)
    amax = fmaxf(amax, fabsf(act_to_f32(v[i])));  // NaN ignored
  amax = warp_max(amax);
  const float s = fp8_block_scale(amax);
  for (int64_t i = lane; i < n; i += 32)
    v[i] = act_from_f32<T>(__fmul_rn(e4m3_round(__fdiv_rn(act_to_f32(v[i]), s)), s));
}

}  // namespace dsv4::cuda::quant
#endif
