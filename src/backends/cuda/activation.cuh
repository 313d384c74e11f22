// Activation storage of the CUDA kernels. Activations live in memory as f32 or bf16
// (act_t = float or __nv_bfloat16); every kernel converts to f32 on load and rounds to the
// storage type on store (round to nearest even), so accumulation, softmax, norms and mHC stay
// f32 whatever the storage. Kernels that take activations are templates on act_t, explicitly
// instantiated for both types in their .cu file (once each: the build machine is small).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace dsv4::cuda {

__device__ __forceinline__ float act_to_f32(float v) {
  return v;
}
__device__ __forceinline__ float act_to_f32(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename act_t>
__device__ __forceinline__ act_t act_from_f32(float v);
template <>
__device__ __forceinline__ float act_from_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 act_from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Four consecutive activations at p as f32 (p aligned to 4 * sizeof(act_t): act4_aligned), and
// the rounded store of four.
__device__ __forceinline__ float4 load_act4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float4 load_act4(const __nv_bfloat16* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void store_act4(float* p, float4 v) {
  *reinterpret_cast<float4*>(p) = v;
}
__device__ __forceinline__ void store_act4(__nv_bfloat16* p, float4 v) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y);
  const __nv_bfloat162 b = __floats2bfloat162_rn(v.z, v.w);
  uint2 raw;
  raw.x = *reinterpret_cast<const uint32_t*>(&a);
  raw.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(p) = raw;
}

template <typename act_t>
inline bool act4_aligned(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) % (4 * sizeof(act_t))) == 0;
}

}  // namespace dsv4::cuda
