// Host-side dispatch of the CUDA backend's ops on the activation dtype: with_act(type, f) calls
// f with a null act_t* tag (float* for f32, __nv_bfloat16* for bf16), so one generic lambda names
// the kernel template once for both types; act_ptr(t, tag) is t's data as that type.
#pragma once

#include <cuda_bf16.h>

#include "core/error.h"
#include "core/tensor.h"

namespace dsv4::cuda {

template <typename F>
decltype(auto) with_act(dtype type, F&& f) {
  if (type == dtype::bf16) return f(static_cast<__nv_bfloat16*>(nullptr));
  DSV4_CHECK(type == dtype::f32, "cuda: activation dtype {} (f32 or bf16)", dtype_name(type));
  return f(static_cast<float*>(nullptr));
}

template <typename act_t>
act_t* act_ptr(const tensor& t, act_t*) {
  return t.view().ptr<act_t>();
}

}  // namespace dsv4::cuda
