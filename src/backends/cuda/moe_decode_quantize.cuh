// The official order's FP8 quantize-dequantize of h (fake_quant_fp8_values): the per-block step
// that the W1/W3 GEMM's fold (moe_decode_gemm.cuh) and the quantize launch share, and that
// launch's kernel.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

namespace {

// Official order: FP8 quantize-dequantize of one 128-block of one pair's hf row (block maximum,
// scale and e4m3 rounding of quant::fp8_block_warp, i.e. fake_quant_fp8_values), written as BF16
// (exact) into the pair's paired-layout h row. One whole warp, 4 values per lane (v4, loaded by
// load_h_block from the block at k_base of the pair's row; L2 loads in the fold, where other
// blocks of the running grid wrote the row, visible through their fence and the counter).
template <bool L2 = false>
__device__ __forceinline__ float4 load_h_block(const float* hf_block, int lane) {
  const float4* p = reinterpret_cast<const float4*>(hf_block) + lane;
  return L2 ? __ldcg(p) : *p;
}
// The values of fake_quant_fp8_values' steps, computed as (MOE24): v / s as v * (1 / s) (s is a
// power of two in [2^-126, 2^127], so 1 / s is exact and both round the same exact quotient) and
// quant::e4m3_round_bits for quant::e4m3_round. Both equalities checked on the host over every f32
// input (e4m3: all 2^32; the quotient: all 2^32 v for s = 2^-126, 2^-20, 1, 2^127 and 2 * 10^6
// random v for every s; bench/kernels/results/2026-11-27_s20_moe24_e4m3_check.{cpp,txt}) and on
// an H200 (chains with this step in the fold bit-equal to chain 0's quantize launch with the
// library functions). The fold's exit 1.0 us earlier at Flash T = 1 (trace; the library
// functions' step was ~1 us of the W1/W3 -> W2 hand-off).
__device__ __forceinline__ void quantize_h_block(float4 v4, uint16_t* h_row, int64_t k_base,
                                                 int lane, bool store = true) {
  const int64_t k0 = k_base + lane * 4;
  const float v[4] = {v4.x, v4.y, v4.z, v4.w};
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) amax = fmaxf(amax, fabsf(v[j]));  // NaN ignored
  amax = quant::warp_max(amax);
  const float s = quant::fp8_block_scale(amax);
  const float inv_s = __fdiv_rn(1.0f, s);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float q = __fmul_rn(quant::e4m3_round_bits(__fmul_rn(v[j], inv_s)), s);
    if (store) h_row[act_u16_index(k0 + j)] = __bfloat16_as_ushort(__float2bfloat16_rn(q));
  }
}

// Official order: quantize_h_block of each 128-block of every valid pair's hf row, one warp per
// (pair, block). EARLY (moe_decode_set_chain 4): the hf block is loaded together with the pair's
// expert index instead of after its check (a row of a bad pair is read, never stored).
template <bool EARLY>
__global__ void __launch_bounds__(256)
    moe_decode_quantize_h_kernel(const float* hf, const int32_t* indices, int64_t pairs,
                                 int64_t experts, int64_t inter, uint16_t* h_hi) {
  pdl_wait();
  pdl_trigger();
  const int64_t blocks_per_row = inter / k_round;
  const int64_t item = int64_t(blockIdx.x) * (256 / k_warp_size) + threadIdx.x / k_warp_size;
  if (item >= pairs * blocks_per_row) return;  // uniform over the warp
  const int64_t p = item / blocks_per_row, b = item % blocks_per_row;
  const int lane = threadIdx.x % k_warp_size;
  const int32_t e = indices[p];
  const bool valid = e >= 0 && e < experts;  // else: hf row never written, its output row NaN
  // EARLY: no branch on the index before the load (ptxas would sink the load), the store
  // predicated instead.
  if (!EARLY && !valid) return;
  quantize_h_block(load_h_block(hf + p * inter + b * k_round, lane), h_hi + p * inter, b * k_round,
                   lane, valid);
}

}  // namespace

}  // namespace dsv4::cuda
