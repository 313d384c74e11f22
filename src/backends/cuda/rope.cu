// RoPE: one thread per rotated pair, grid-stride. Angle and trigonometry are f32 with the
// accurate sinf/cosf (never __sinf: positions reach 1e6 and the fast forms lose the angle), the
// same arithmetic as the CPU reference's rope_rotate.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rope.h"

namespace dsv4::cuda {

namespace {

constexpr int k_rope_threads = 256;

template <typename act_t>
__global__ void rope_kernel(act_t* x, int64_t pairs, int64_t heads, int64_t head_dim,
                            int64_t rope_dim, const int32_t* positions, const float* inv_freq,
                            bool inverse) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  const int64_t half = rope_dim / 2;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p % half;
    const int64_t row = p / half;  // token * heads + head
    const int64_t token = row / heads;
    const float angle = float(positions[token]) * inv_freq[i];
    const float c = cosf(angle);
    const float s = inverse ? -sinf(angle) : sinf(angle);
    act_t* v = x + row * head_dim + (head_dim - rope_dim) + 2 * i;
    const float a = act_to_f32(v[0]);
    const float b = act_to_f32(v[1]);
    // Explicit roundings: no FMA contraction, so the result rounds as the CPU's does.
    v[0] = act_from_f32<act_t>(__fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)));
    v[1] = act_from_f32<act_t>(__fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s)));
  }
}

}  // namespace

template <typename act_t>
cudaError_t rope(act_t* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rope_dim,
                 const int32_t* positions, const float* inv_freq, bool inverse,
                 cudaStream_t stream) {
  if (tokens < 0 || heads <= 0 || rope_dim < 0 || rope_dim % 2 != 0 || rope_dim > head_dim)
    return cudaErrorInvalidValue;
  const int64_t pairs = tokens * heads * (rope_dim / 2);
  if (pairs == 0) return cudaSuccess;
  return launch_small(rope_kernel<act_t>, grid_stride_blocks(pairs, k_rope_threads), k_rope_threads,
                      0, stream, x, pairs, heads, head_dim, rope_dim, positions, inv_freq, inverse);
}

template cudaError_t rope<float>(float*, int64_t, int64_t, int64_t, int64_t, const int32_t*,
                                 const float*, bool, cudaStream_t);
template cudaError_t rope<__nv_bfloat16>(__nv_bfloat16*, int64_t, int64_t, int64_t, int64_t,
                                         const int32_t*, const float*, bool, cudaStream_t);

}  // namespace dsv4::cuda
