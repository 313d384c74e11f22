// Elementwise ops (grid-stride, float4 when all pointers are 16-byte aligned, scalar tail) and
// the embedding gather (one block per token). exp is the accurate expf, as on the CPU.
#include "backends/cuda/elementwise.h"
#include "backends/cuda/kernel_common.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_elementwise_threads = 256;

__device__ __forceinline__ float swiglu_one(float g, float u, float limit) {
  const float gc = fminf(g, limit);
  const float uc = fminf(fmaxf(u, -limit), limit);
  return gc / (1.0f + expf(-gc)) * uc;
}

// Vectors [0, n4) as float4, then the scalar tail [4 * n4, n).
__global__ void swiglu_kernel(const float* gate, const float* up, float* y, int64_t n, int64_t n4,
                              float limit) {
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    const float4 g = reinterpret_cast<const float4*>(gate)[i];
    const float4 u = reinterpret_cast<const float4*>(up)[i];
    reinterpret_cast<float4*>(y)[i] =
        make_float4(swiglu_one(g.x, u.x, limit), swiglu_one(g.y, u.y, limit),
                    swiglu_one(g.z, u.z, limit), swiglu_one(g.w, u.w, limit));
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride) y[i] = swiglu_one(gate[i], up[i], limit);
}

__global__ void add_kernel(float* x, const float* y, int64_t n, int64_t n4) {
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    float4 a = reinterpret_cast<float4*>(x)[i];
    const float4 b = reinterpret_cast<const float4*>(y)[i];
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
    reinterpret_cast<float4*>(x)[i] = a;
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride) x[i] += y[i];
}

__global__ void scale_kernel(float* x, float s, int64_t n, int64_t n4) {
  const int64_t start = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    float4 a = reinterpret_cast<float4*>(x)[i];
    a.x *= s;
    a.y *= s;
    a.z *= s;
    a.w *= s;
    reinterpret_cast<float4*>(x)[i] = a;
  }
  for (int64_t i = 4 * n4 + start; i < n; i += stride) x[i] *= s;
}

// One block per token (grid-stride over tokens); `vec` says rows are float4-addressable.
__global__ void embed_kernel(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                             int64_t tokens, float* out, bool vec) {
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int32_t id = ids[t];
    float* dst = out + t * dim;
    if (id < 0 || id >= vocab) {
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = __int_as_float(0x7fc00000);
      continue;
    }
    const float* src = table + int64_t(id) * dim;
    if (vec) {
      for (int64_t i = threadIdx.x; i < dim / 4; i += blockDim.x)
        reinterpret_cast<float4*>(dst)[i] = reinterpret_cast<const float4*>(src)[i];
    } else {
      for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
    }
  }
}

}  // namespace

cudaError_t swiglu_f32(const float* gate, const float* up, float* y, int64_t n, float limit,
                       cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = aligned_16(gate) && aligned_16(up) && aligned_16(y) ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  swiglu_kernel<<<grid_stride_blocks(work, k_elementwise_threads), k_elementwise_threads, 0,
                  stream>>>(gate, up, y, n, n4, limit);
  return cudaGetLastError();
}

cudaError_t add_f32(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = aligned_16(x) && aligned_16(y) ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  add_kernel<<<grid_stride_blocks(work, k_elementwise_threads), k_elementwise_threads, 0, stream>>>(
      x, y, n, n4);
  return cudaGetLastError();
}

cudaError_t scale_f32(float* x, float s, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = aligned_16(x) ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  scale_kernel<<<grid_stride_blocks(work, k_elementwise_threads), k_elementwise_threads, 0,
                 stream>>>(x, s, n, n4);
  return cudaGetLastError();
}

cudaError_t embed_f32(const float* table, int64_t vocab, int64_t dim, const int32_t* ids,
                      int64_t tokens, float* out, cudaStream_t stream) {
  if (vocab <= 0 || dim <= 0 || tokens < 0) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const bool vec = dim % 4 == 0 && aligned_16(table) && aligned_16(out);
  const int64_t row_work = vec ? dim / 4 : dim;
  int threads = int(ceil_div(row_work, k_warp_size) * k_warp_size);
  if (threads > k_elementwise_threads) threads = k_elementwise_threads;
  const unsigned blocks = unsigned(tokens < (1 << 20) ? tokens : (1 << 20));
  embed_kernel<<<blocks, threads, 0, stream>>>(table, vocab, dim, ids, tokens, out, vec);
  return cudaGetLastError();
}

}  // namespace dsv4::cuda
