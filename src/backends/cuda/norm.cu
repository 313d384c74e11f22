// RMS norm: one block per normalised slice (a row, or a group of a row). Each thread keeps its
// share of the slice in registers between the sum of squares and the scaled write, so x is read
// from memory once; slices longer than the register share (> k_rms_cached vectors per thread at
// 1024 threads) re-read the tail. float4 accesses when the slice length and pointers allow.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/norm.h"
#include "backends/cuda/pdl.cuh"

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
// v * s, times the weight wv (loaded) or w[i] (w non-null) as wv * (v * s).
__device__ __forceinline__ float scaled_by(float v, float s, float wv) {
  return wv * (v * s);
}
__device__ __forceinline__ float4 scaled_by(float4 v, float s, float4 wv) {
  return make_float4(scaled_by(v.x, s, wv.x), scaled_by(v.y, s, wv.y), scaled_by(v.z, s, wv.z),
                     scaled_by(v.w, s, wv.w));
}
__device__ __forceinline__ float scaled(float v, float s, const float* w, int64_t i) {
  return w ? scaled_by(v, s, w[i]) : v * s;
}
__device__ __forceinline__ float4 scaled(float4 v, float s, const float4* w, int64_t i) {
  return w ? scaled_by(v, s, w[i]) : make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

// Vec: each element is 4 consecutive features (slice length a multiple of 4, x / y aligned to 4
// activations, weight 16-byte aligned); otherwise one feature. `len` counts elements per slice,
// `n_features` features per slice. x is held as f32 between the two passes (exact for both act_t).
template <typename act_t, bool Vec, bool EarlyW>
__global__ void rms_norm_kernel(const act_t* x, const float* w, act_t* y, int64_t len,
                                float n_features, float eps) {
  using V = std::conditional_t<Vec, float4, float>;
  constexpr int64_t width = Vec ? 4 : 1;
  __shared__ float scratch[k_warp_size];
  const int64_t slice = blockIdx.x;
  const act_t* xs = x + slice * len * width;
  act_t* ys = y + slice * len * width;
  const int64_t stride = blockDim.x;
  auto load = [&](int64_t i) -> V {
    if constexpr (Vec)
      return load_act4(xs + i * 4);
    else
      return act_to_f32(xs[i]);
  };
  auto store = [&](int64_t i, V v) {
    if constexpr (Vec)
      store_act4(ys + i * 4, v);
    else
      ys[i] = act_from_f32<act_t>(v);
  };
  const V* wv = reinterpret_cast<const V*>(w);
  V cached[k_rms_cached], wcached[k_rms_cached];
  pdl_trigger();  // pdl.cuh, launch_small
  // EarlyW: the weights of the cached share, loaded first (they depend on no earlier launch, nor
  // on the reduction; loaded in the store loop they are a second memory trip after it, and the
  // decode step's norm weights are evicted from L2 by the layer weights streamed between two
  // uses), before the wait for the predecessor's x.
  if (EarlyW && w) {
#pragma unroll
    for (int k = 0; k < k_rms_cached; ++k) {
      const int64_t i = threadIdx.x + k * stride;
      if (i < len) wcached[k] = wv[i];
    }
  }
  pdl_wait();
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < k_rms_cached; ++k) {
    const int64_t i = threadIdx.x + k * stride;
    if (i < len) {
      cached[k] = load(i);
      ss += sum_squares(cached[k]);
    }
  }
  for (int64_t i = threadIdx.x + k_rms_cached * stride; i < len; i += stride)
    ss += sum_squares(load(i));
  ss = block_sum(ss, scratch);
  // 1 / sqrt rather than rsqrtf: the correctly rounded form the CPU reference uses.
  const float inv = 1.0f / sqrtf(ss / n_features + eps);
#pragma unroll
  for (int k = 0; k < k_rms_cached; ++k) {
    const int64_t i = threadIdx.x + k * stride;
    if (i < len)
      store(i, EarlyW && w ? scaled_by(cached[k], inv, wcached[k]) : scaled(cached[k], inv, wv, i));
  }
  for (int64_t i = threadIdx.x + k_rms_cached * stride; i < len; i += stride)
    store(i, scaled(load(i), inv, wv, i));
}

// Enough threads that each holds <= k_rms_cached vectors, a multiple of 32, at most 1024.
int rms_norm_threads(int64_t len) {
  int64_t threads = ceil_div(ceil_div(len, k_rms_cached), k_warp_size) * k_warp_size;
  if (threads < k_warp_size) threads = k_warp_size;
  if (threads > k_rms_max_threads) threads = k_rms_max_threads;
  return int(threads);
}

}  // namespace

template <typename act_t>
cudaError_t rms_norm(const act_t* x, const float* weight, act_t* y, int64_t rows, int64_t n,
                     int64_t groups, float eps, cudaStream_t stream) {
  if (rows < 0 || n <= 0 || groups <= 0 || n % groups != 0) return cudaErrorInvalidValue;
  const int64_t slices = rows * groups;
  if (slices == 0) return cudaSuccess;
  if (slices > INT32_MAX) return cudaErrorInvalidValue;
  const int64_t g = n / groups;
  const bool vec = g % 4 == 0 && act4_aligned<act_t>(x) && act4_aligned<act_t>(y) &&
                   (!weight || aligned_16(weight));
  // Early weight loads where the grid is small (decode: one CTA per row, each waiting on its own
  // memory trips); H100, session 25 (call l25d, ncu device times, caches flushed per launch, f32):
  // 64 rows x 4096 / 7168 5.41 / 5.82 -> 4.67 / 5.47 us, but 4096 rows x 4096 / 7168 44.8 / 80.6 ->
  // 47.5 / 95.4 us (the extra registers and loads cost where many CTAs hide each other's trips).
  const bool early = weight && slices <= 2 * int64_t(current_device_sm_count());
  auto launch = [&](auto vec_tag, auto early_tag, int64_t len) {
    constexpr bool V = decltype(vec_tag)::value, E = decltype(early_tag)::value;
    return launch_small(rms_norm_kernel<act_t, V, E>, unsigned(slices), rms_norm_threads(len), 0,
                        stream, x, weight, y, len, float(g), eps);
  };
  using yes = std::true_type;
  using no = std::false_type;
  if (vec) return early ? launch(yes{}, yes{}, g / 4) : launch(yes{}, no{}, g / 4);
  return early ? launch(no{}, yes{}, g) : launch(no{}, no{}, g);
}

template cudaError_t rms_norm<float>(const float*, const float*, float*, int64_t, int64_t, int64_t,
                                     float, cudaStream_t);
template cudaError_t rms_norm<__nv_bfloat16>(const __nv_bfloat16*, const float*, __nv_bfloat16*,
                                             int64_t, int64_t, int64_t, float, cudaStream_t);

}  // namespace dsv4::cuda
