// The combine's per-row merge weights (shared by the combines and the ws kernel's fold mode)
// and the f32 / bf16 output stores (attention_decode.cu).
#pragma once

#include <cuda_bf16.h>

#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mma_sm80.cuh"

namespace dsv4::cuda {

namespace {

// One row's merge weights in the combine kernel's arithmetic (the row combine's, so that it stays
// bit for bit the block combine's):
// M = max(m_r, sink2) over the n <= lanes splits' (m, l) in v (log2 domain), row_w[r] =
// 2^(m_r - M), and row_w[lanes] = 1 / D, D = sum_r l_r w_r + 2^(sink2 - M) summed as lane 0 of
// the combine's shuffle-xor butterfly sums lanes 0..lanes-1 (lanes >= n hold 0; the butterfly
// levels above lanes / 2 and the other warps add exactly 0, so any lanes >= n gives the same D).
template <int lanes>
__device__ __forceinline__ void merge_row_weights(const float2 (&v)[lanes], int n, float sink2,
                                                  float* row_w) {
  static_assert(lanes >= 1 && lanes <= 16 && (lanes & (lanes - 1)) == 0);
  float mx = -INFINITY;
#pragma unroll
  for (int r = 0; r < lanes; ++r)
    if (r < n) mx = fmaxf(mx, v[r].x);
  mx = fmaxf(mx, sink2);
  float x[lanes];
#pragma unroll
  for (int r = 0; r < lanes; ++r) {
    x[r] = 0.0f;
    if (r < n) {
      const float w = v[r].x == -INFINITY ? 0.0f : exp2f(v[r].x - mx);
      x[r] = w == 0.0f ? 0.0f : __fmul_rn(v[r].y, w);
      row_w[r] = w;
    }
  }
  // The levels spelled out (a halving loop was left rolled: x went to the stack).
  if constexpr (lanes >= 16) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = __fadd_rn(x[j], x[j + 8]);
  }
  if constexpr (lanes >= 8) {
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = __fadd_rn(x[j], x[j + 4]);
  }
  if constexpr (lanes >= 4) {
#pragma unroll
    for (int j = 0; j < 2; ++j) x[j] = __fadd_rn(x[j], x[j + 2]);
  }
  if constexpr (lanes >= 2) x[0] = __fadd_rn(x[0], x[1]);
  row_w[lanes] = 1.0f / __fadd_rn(x[0], exp2f(sink2 - mx));
}

__device__ __forceinline__ void store4(float* p, float4 v) {
  *reinterpret_cast<float4*>(p) = v;
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16x2(v.x, v.y), pack_bf16x2(v.z, v.w));
}
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<uint32_t*>(p) = pack_bf16x2(a, b);
}

}  // namespace

}  // namespace dsv4::cuda
