// Activation storage of the CUDA kernels. Activations live in memory as f32 or bf16
// (act_t = float or __nv_bfloat16); every kernel converts to f32 on load and rounds to the
// storage type on store (round to nearest even), so accumulation, softmax, norms and mHC stay
// f32 whatever the storage. Kernels that take activations are templates on act_t, explicitly
// instantiated for both types in their .cu file (once each: the build machine is small).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

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

}  // namespace dsv4::cuda
