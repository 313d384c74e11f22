// Elementwise kernels (f32 or bf16 activations).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// act_t: float or __nv_bfloat16 (f32 arithmetic, rounded on store).
// y[i] = silu(min(gate[i], limit)) * clamp(up[i], -limit, limit) for i < n.
template <typename act_t>
cudaError_t swiglu(const act_t* gate, const act_t* up, act_t* y, int64_t n, float limit,
                   cudaStream_t stream);
// x[i] += y[i] for i < n (in place on x).
template <typename act_t>
cudaError_t add(act_t* x, const act_t* y, int64_t n, cudaStream_t stream);
// x[i] *= s for i < n (in place).
template <typename act_t>
cudaError_t scale(act_t* x, float s, int64_t n, cudaStream_t stream);
// out[t] = table[ids[t]] for table [vocab, dim] f32, out [tokens, dim]. An id outside [0, vocab)
// (the CPU backend throws) writes a row of NaN here, so the caller's checks see it.
template <typename act_t>
cudaError_t embed(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                  int64_t tokens, act_t* out, cudaStream_t stream);

}  // namespace dsv4::cuda
