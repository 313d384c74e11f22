// RMS normalisation kernels (f32 in and out, f32 accumulation).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// y[r, s*g + i] = x[r, s*g + i] * rsqrt(mean_i(x[r, s*g + i]^2) + eps) * (weight ? weight[i] : 1)
// for rows r < rows, slices s < groups of g = n / groups features (n % groups == 0). x and y are
// [rows, n] contiguous and may alias. weight may be null (unweighted) or hold g values.
cudaError_t rms_norm_f32(const float* x, const float* weight, float* y, int64_t rows, int64_t n,
                         int64_t groups, float eps, cudaStream_t stream);

}  // namespace dsv4::cuda
