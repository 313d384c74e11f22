// Elementwise ops (grid-stride, 4 activations at a time when all pointers allow, scalar tail) and
// the embedding gather (one block per token). exp is the accurate expf, as on the CPU.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_elementwise_threads = 256;

__device__ __forceinline__ float swiglu_one(float g, float u, float limit) {
  const float gc = fminf(g, limit);
  const float uc = fminf(fmaxf(u, -limit), limit);
  return gc / (1.0f + expf(-gc)) * uc;
}

// Vectors [0, n4) of 4 activations, then the scalar tail [4 * n4, n).
template <typename act_t>
__global__ void swiglu_kernel(const act_t* gate, const act_t* up, act_t* y, int64_t n, int64_t n4,
                              float limit) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    const float4 g = load_act4(gate + 4 * i);
    const float4 u = load_act4(up + 4 * i);
    store_act4(y + 4 * i, make_float4(swiglu_one(g.x, u.x, limit), swiglu_one(g.y, u.y, limit),
                                      swiglu_one(g.z, u.z, limit), swiglu_one(g.w, u.w, limit)));
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride)
    y[i] = act_from_f32<act_t>(swiglu_one(act_to_f32(gate[i]), act_to_f32(up[i]), limit));
}

template <typename act_t>
__global__ void add_kernel(act_t* x, const act_t* y, int64_t n, int64_t n4) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    float4 a = load_act4(x + 4 * i);
    const float4 b = load_act4(y + 4 * i);
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
    store_act4(x + 4 * i, a);
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride)
    x[i] = act_from_f32<act_t>(act_to_f32(x[i]) + act_to_f32(y[i]));
}

template <typename act_t>
__global__ void scale_kernel(act_t* x, float s, int64_t n, int64_t n4) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    float4 a = load_act4(x + 4 * i);
    a.x *= s;
    a.y *= s;
    a.z *= s;
    a.w *= s;
    store_act4(x + 4 * i, a);
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride)
    x[i] = act_from_f32<act_t>(act_to_f32(x[i]) * s);
}

// One block per token (grid-stride over tokens); `vec` says rows are 4-element addressable.
template <typename act_t>
__global__ void embed_kernel(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                             int64_t tokens, act_t* out, bool vec) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int32_t id = ids[t];
    act_t* dst = out + t * dim;
    if (id < 0 || id >= vocab) {
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
        dst[i] = act_from_f32<act_t>(__int_as_float(0x7fc00000));
      continue;
    }
    const float* src = table + int64_t(id) * dim;
    if (vec) {
      for (int64_t i = threadIdx.x; i < dim / 4; i += blockDim.x)
        store_act4(dst + 4 * i, reinterpret_cast<const float4*>(src)[i]);
    } else {
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = act_from_f32<act_t>(src[i]);
    }
  }
}

}  // namespace

template <typename act_t>
cudaError_t swiglu(const act_t* gate, const act_t* up, act_t* y, int64_t n, float limit,
                   cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const bool vec = act4_aligned<act_t>(gate) && act4_aligned<act_t>(up) && act4_aligned<act_t>(y);
  const int64_t n4 = vec ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  return launch_small(swiglu_kernel<act_t>, grid_stride_blocks(work, k_elementwise_threads),
                      k_elementwise_threads, 0, stream, gate, up, y, n, n4, limit);
}

template <typename act_t>
cudaError_t add(act_t* x, const act_t* y, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = act4_aligned<act_t>(x) && act4_aligned<act_t>(y) ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  return launch_small(add_kernel<act_t>, grid_stride_blocks(work, k_elementwise_threads),
                      k_elementwise_threads, 0, stream, x, y, n, n4);
}

template <typename act_t>
cudaError_t scale(act_t* x, float s, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = act4_aligned<act_t>(x) ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  return launch_small(scale_kernel<act_t>, grid_stride_blocks(work, k_elementwise_threads),
                      k_elementwise_threads, 0, stream, x, s, n, n4);
}

template <typename act_t>
cudaError_t embed(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                  int64_t tokens, act_t* out, cudaStream_t stream) {
  if (vocab <= 0 || dim <= 0 || tokens < 0) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const bool vec = dim % 4 == 0 && aligned_16(table) && act4_aligned<act_t>(out);
  const int64_t row_work = vec ? dim / 4 : dim;
  int threads = int(ceil_div(row_work, k_warp_size) * k_warp_size);
  if (threads > k_elementwise_threads) threads = k_elementwise_threads;
  const unsigned blocks = unsigned(tokens < (1 << 20) ? tokens : (1 << 20));
  return launch_small(embed_kernel<act_t>, blocks, threads, 0, stream, table, vocab, dim, ids,
                      tokens, out, vec);
}

#define DSV4_ELEMENTWISE_INSTANTIATE(T)                                                      \
  template cudaError_t swiglu<T>(const T*, const T*, T*, int64_t, float, cudaStream_t);      \
  template cudaError_t add<T>(T*, const T*, int64_t, cudaStream_t);                          \
  template cudaError_t scale<T>(T*, float, int64_t, cudaStream_t);                           \
  template cudaError_t embed<T>(const float*, int64_t, int64_t, const int32_t*, int64_t, T*, \
                                cudaStream_t);
DSV4_ELEMENTWISE_INSTANTIATE(float)
DSV4_ELEMENTWISE_INSTANTIATE(__nv_bfloat16)
#undef DSV4_ELEMENTWISE_INSTANTIATE

}  // namespace dsv4::cuda
