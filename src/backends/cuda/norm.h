// RMS normalisation kernels (f32 or bf16 activations, f32 accumulation).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// y[r, s*g + i] = x[r, s*g + i] * rsqrt(mean_i(x[r, s*g + i]^2) + eps) * (weight ? weight[i] : 1)
// for rows r < rows, slices s < groups of g = n / groups features (n % groups == 0). x and y are
// [rows, n] contiguous and may alias. weight may be null (unweighted) or hold g values.
// act_t: float or __nv_bfloat16 (activation.cuh); weight is f32, the arithmetic f32.
template <typename act_t>
cudaError_t rms_norm(const act_t* x, const float* weight, act_t* y, int64_t rows, int64_t n,
                     int64_t groups, float eps, cudaStream_t stream);

}  // namespace dsv4::cuda
