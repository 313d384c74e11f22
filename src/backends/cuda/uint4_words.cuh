// Word w (0..3, a compile-time constant after unrolling) of a 16-byte vector register: one
// select chain that ptxas resolves to a register name, shared by the kernels that unpack 16-byte
// loads word by word (FP4 prefill cores, indexer scores).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

__device__ __forceinline__ uint32_t word_of(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

}  // namespace dsv4::cuda
