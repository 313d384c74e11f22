// The tail shared by the dense decode GEMM kernels (linear_decode.cu, linear_decode_fp8act.cu):
// a block is rt x ks warps, rt 16-row tiles each split into ks K parts; every warp holds the
// mma.sync C fragments of its 16 rows x NT n-tiles of 8 tokens (c0 / c1: row g, token columns
// 2q / 2q + 1; c2 / c3: row g + 8).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/kernel_common.cuh"

namespace dsv4::cuda::decode_tail {

// Sums the K parts of a row tile into K part 0, in K-part order through shared memory `partial`
// ([ks - 1][rt][NT][4][32] floats), so results do not depend on timing. Every warp of the block
// must call it (it has a block barrier when ks > 1); returns whether this warp holds the sum.
template <int NT>
__device__ __forceinline__ bool sum_k_parts(float (&acc)[NT][4], float* partial, int rt, int ks,
                                            int tile, int kpart, int lane) {
  if (ks > 1) {
    if (kpart > 0) {
      float* mine = partial + size_t((kpart - 1) * rt + tile) * NT * 4 * k_warp_size;
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) mine[(j * 4 + i) * k_warp_size + lane] = acc[j][i];
    }
    __syncthreads();
    if (kpart > 0) return false;
    for (int p = 1; p < ks; ++p) {
      const float* theirs = partial + size_t((p - 1) * rt + tile) * NT * 4 * k_warp_size;
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[j][i] += theirs[(j * 4 + i) * k_warp_size + lane];
    }
  }
  return true;
}

// y[token, r0 + row] = finish(acc) for the tokens < `tokens` (y [tokens, rows], f32 or bf16
// rounded once); finish: the kernel's last step on the f32 sum (a scale, or nothing).
template <int NT, typename finish_t>
__device__ __forceinline__ void store(const float (&acc)[NT][4], finish_t finish, int tokens,
                                      int64_t rows, int64_t r0, int g, int q, void* y,
                                      bool y_bf16) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int col = 8 * j + 2 * q + (i & 1);
      if (col >= tokens) continue;
      const int64_t at = int64_t(col) * rows + r0 + g + 8 * (i >> 1);
      if (y_bf16)
        static_cast<__nv_bfloat16*>(y)[at] = __float2bfloat16_rn(finish(acc[j][i]));
      else
        static_cast<float*>(y)[at] = finish(acc[j][i]);
    }
}

}  // namespace dsv4::cuda::decode_tail
