// Device helpers shared by the op files of the CUDA backend (included by .cu files only).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

constexpr int k_warp_size = 32;

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// True when every pointer is 16-byte aligned (float4 access is then legal at offsets that are
// multiples of 4 floats).
inline bool aligned_16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// SMs of the current device (132 if the query fails): launch shapes that fill the device.
inline int current_device_sm_count() {
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess)
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

// Grid for a grid-stride loop over `work` items with `threads` per block: enough blocks to fill
// the device several times over, capped well under the 2^31 - 1 grid limit.
inline unsigned grid_stride_blocks(int64_t work, int threads) {
  const int64_t blocks = ceil_div(work, threads);
  return unsigned(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

// Order-preserving map of f32 onto u32 (larger float -> larger u32, NaN aside); -0 folds into +0
// so that equal scores stay ties (the top-k tie rule then picks the lower entry, as the CPU does).
__device__ __forceinline__ uint32_t ordered_float_bits(float f) {
  if (f == 0.0f) f = 0.0f;
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = k_warp_size / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum of `v` over the block; every thread gets the total. `scratch` holds >= 32 floats. Ends with
// a barrier, so `scratch` may be reused right after. blockDim.x must be a multiple of 32.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int warps = blockDim.x / k_warp_size;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

}  // namespace dsv4::cuda
