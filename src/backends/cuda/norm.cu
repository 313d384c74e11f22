// RMS norm: one block per normalised slice (a row, or a group of a row). Each thread keeps its
// share of the slice in registers between the sum of squares and the scaled write, so x is read
// from memory once; slices longer than the register share (> k_rms_cached vectors per thread at
// 1024 threads) re-read the tail. float4 accesses when the slice length and pointers allow.
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/norm.h"

namespace dsv4::cuda {

namespace {

constexpr int k_rms_cached = 4;  // vectors per thread held in registers
constexpr int k_rms_max_threads = 1024;

__device__ __forceinline__ float sum_squares(float v) {
  return v * v;
}
__device__ __forceinline__ float sum_squares(float4 v) {
  return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
}
__device__ __forceinline__ float scaled(float v, float s, const float* w, int64_t i) {
  return w ? w[i] * (v * s) : v * s;
}
__device__ __forceinline__ float4 scaled(float4 v, float s, const float4* w, int64_t i) {
  if (w) {
    const float4 wv = w[i];
    return make_float4(wv.x * (v.x * s), wv.y * (v.y * s), wv.z * (v.z * s), wv.w * (v.w * s));
  }
  return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

// V is float (any slice length) or float4 (slice length a multiple of 4, 16-byte aligned
// pointers); `len` counts V elements per slice, `n_features` floats per slice.
template <typename V>
__global__ void rms_norm_kernel(const V* x, const V* w, V* y, int64_t len, float n_features,
                                float eps) {
  __shared__ float scratch[k_warp_size];
  const int64_t slice = blockIdx.x;
  const V* xs = x + slice * len;
  V* ys = y + slice * len;
  const int64_t stride = blockDim.x;
  V cached[k_rms_cached];
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < k_rms_cached; ++k) {
    const int64_t i = threadIdx.x + k * stride;
    if (i < len) {
      cached[k] = xs[i];
      ss += sum_squares(cached[k]);
    }
  }
  for (int64_t i = threadIdx.x + k_rms_cached * stride; i < len; i += stride)
    ss += sum_squares(xs[i]);
  ss = block_sum(ss, scratch);
  // 1 / sqrt rather than rsqrtf: the correctly rounded form the CPU reference uses.
  const float inv = 1.0f / sqrtf(ss / n_features + eps);
#pragma unroll
  for (int k = 0; k < k_rms_cached; ++k) {
    const int64_t i = threadIdx.x + k * stride;
    if (i < len) ys[i] = scaled(cached[k], inv, w, i);
  }
  for (int64_t i = threadIdx.x + k_rms_cached * stride; i < len; i += stride)
    ys[i] = scaled(xs[i], inv, w, i);
}

// Enough threads that each holds <= k_rms_cached vectors, a multiple of 32, at most 1024.
int rms_norm_threads(int64_t len) {
  int64_t threads = ceil_div(ceil_div(len, k_rms_cached), k_warp_size) * k_warp_size;
  if (threads < k_warp_size) threads = k_warp_size;
  if (threads > k_rms_max_threads) threads = k_rms_max_threads;
  return int(threads);
}

}  // namespace

cudaError_t rms_norm_f32(const float* x, const float* weight, float* y, int64_t rows, int64_t n,
                         int64_t groups, float eps, cudaStream_t stream) {
  if (rows < 0 || n <= 0 || groups <= 0 || n % groups != 0) return cudaErrorInvalidValue;
  const int64_t slices = rows * groups;
  if (slices == 0) return cudaSuccess;
  if (slices > INT32_MAX) return cudaErrorInvalidValue;
  const int64_t g = n / groups;
  const bool vec = g % 4 == 0 && aligned_16(x) && aligned_16(y) && (!weight || aligned_16(weight));
  if (vec) {
    const int64_t len = g / 4;
    rms_norm_kernel<float4><<<unsigned(slices), rms_norm_threads(len), 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(weight),
        reinterpret_cast<float4*>(y), len, float(g), eps);
  } else {
    rms_norm_kernel<float>
        <<<unsigned(slices), rms_norm_threads(g), 0, stream>>>(x, weight, y, g, float(g), eps);
  }
  return cudaGetLastError();
}

}  // namespace dsv4::cuda
