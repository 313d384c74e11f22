// Elementwise and row-gather kernels (f32).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// y[i] = silu(min(gate[i], limit)) * clamp(up[i], -limit, limit) for i < n.
cudaError_t swiglu_f32(const float* gate, const float* up, float* y, int64_t n, float limit,
                       cudaStream_t stream);
// x[i] += y[i] for i < n (in place on x).
cudaError_t add_f32(float* x, const float* y, int64_t n, cudaStream_t stream);
// x[i] *= s for i < n (in place).
cudaError_t scale_f32(float* x, float s, int64_t n, cudaStream_t stream);
// out[t] = table[ids[t]] for table [vocab, dim], out [tokens, dim]. An id outside [0, vocab)
// (the CPU backend throws) writes a row of NaN here, so the caller's checks see it.
cudaError_t embed_f32(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                      int64_t tokens, float* out, cudaStream_t stream);

}  // namespace dsv4::cuda
