// sm_90a warpgroup-MMA primitives shared by the wgmma kernels (moe_prefill_wgmma_kernel.cuh,
// attention_decode_wgmma.cuh): the shared-memory matrix descriptor of a 128-byte-swizzled operand
// and the fence / commit / wait / proxy-fence instructions around wgmma.mma_async. Each kernel
// keeps its own wgmma.mma_async shapes (operand sources and major-ness differ).
#pragma once

#include <cstdint>

namespace dsv4::cuda::wgmma {

// Descriptor of an operand in shared memory with the 128-byte swizzle (layout type 1 << 62):
// start address, leading- and stride-dimension byte offsets, each field in 16-byte units.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((addr & 0x3FFFFu) >> 4) | (uint64_t((lbo & 0x3FFFFu) >> 4) << 16) |
         (uint64_t((sbo & 0x3FFFFu) >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most n committed groups are pending.
template <int n>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator across a wait.
__device__ __forceinline__ void reg_fence(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}
// Generic-proxy writes to shared memory (cp.async, st.shared) made visible to wgmma.
__device__ __forceinline__ void fence_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace dsv4::cuda::wgmma
