// Rotary position embedding kernels (f32 or bf16 activations, in place).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// In place on x [tokens, heads * head_dim]: in each head slice, the trailing rope_dim dims form
// interleaved pairs (v[2i], v[2i+1]) rotated by angle = float(positions[t]) * inv_freq[i] (by
// -angle when inverse). rope_dim is even and <= head_dim; inv_freq holds rope_dim / 2 values.
// act_t: float or __nv_bfloat16; the rotation is computed in f32 and rounded on store.
template <typename act_t>
cudaError_t rope(act_t* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rope_dim,
                 const int32_t* positions, const float* inv_freq, bool inverse,
                 cudaStream_t stream);

}  // namespace dsv4::cuda
