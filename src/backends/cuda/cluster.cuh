// Thread block clusters (sm_90): the CTA's rank, the cluster-wide barrier and loads from another
// CTA's shared memory (distributed shared memory, DSMEM). Used by the compressor (compressor.cu)
// and mhc.cu, whose CTAs splitting a row's channels exchange their partial sums, and by the
// indexer's cluster select (indexer_topk_fast_select.cuh).
//
// A CTA's shared memory may be read by the others only while it runs: every CTA of the cluster
// passes a final sync() after its last remote read, before it exits.
#pragma once

#include <cstdint>

namespace dsv4::cuda::cluster {

__device__ __forceinline__ uint32_t rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster arrives (whole warps: .aligned); shared-memory writes
// before arrive are visible to the threads of the cluster after their wait (release / acquire).
__device__ __forceinline__ void arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void sync() {
  arrive();
  wait();
}

// The shared::cluster address of the shared::cta address `addr` in the CTA of rank `r`.
__device__ __forceinline__ uint32_t map(uint32_t addr, uint32_t r) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(r));
  return out;
}

__device__ __forceinline__ float load_f(uint32_t cluster_addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(cluster_addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t load_u32(uint32_t cluster_addr) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(cluster_addr) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long load_u64(uint32_t cluster_addr) {
  unsigned long long v;
  asm volatile("ld.shared::cluster.u64 %0, [%1];\n" : "=l"(v) : "r"(cluster_addr) : "memory");
  return v;
}

}  // namespace dsv4::cuda::cluster
