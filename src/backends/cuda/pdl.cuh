// Programmatic dependent launch (PDL) for chains of kernels on one stream, captured in graphs
// like plain launches (included by .cu files only).
//
// Contract of a kernel launched with launch_pdl(true, ...): it may start before its predecessor
// on the stream has finished, so it must call pdl_wait() before it reads anything a previous
// launch wrote and before it writes anything a previous launch may still read (scratch reused
// from one call to the next). Work that touches neither, such as streaming weights, may come
// first: that is the point. pdl_wait() returns once the predecessor grid has completed and its
// writes are visible; because the predecessor could not complete before its own wait returned,
// this covers every earlier launch of the chain. pdl_trigger() lets the successor launch (once
// every block of this grid has triggered or exited); a successor launched without the attribute
// waits for completion as usual. Both instructions are no-ops in a grid launched without it.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <utility>

namespace dsv4::cuda {

__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// Launches kernel with (pdl) or without the programmatic stream serialization attribute.
template <typename... Params, typename... Args>
cudaError_t launch_pdl(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block,
                       size_t dynamic_smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = dynamic_smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// The decode step's small kernels (norms, RoPE, elementwise ops, row copies, fake quantization,
// the compressor's ring, the FP4 key pack) are programmatic dependent launches: each triggers and
// waits first thing (weights and other constants may be loaded between the two), so its launch
// and block scheduling overlap its predecessor's tail instead of following its completion.
// DSV4_PDL_SMALL=0 launches them plainly (A/B in one binary).
inline bool pdl_small_kernels() {
  static const bool on = [] {
    const char* env = std::getenv("DSV4_PDL_SMALL");
    return !env || std::atoi(env) != 0;
  }();
  return on;
}

template <typename... Params, typename... Args>
cudaError_t launch_small(void (*kernel)(Params...), dim3 grid, dim3 block, size_t dynamic_smem,
                         cudaStream_t stream, Args&&... args) {
  return launch_pdl(pdl_small_kernels(), kernel, grid, block, dynamic_smem, stream,
                    std::forward<Args>(args)...);
}

}  // namespace dsv4::cuda
