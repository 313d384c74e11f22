// TMA tensor copies (sm_90) from a CUtensorMap into shared memory, completing on an mbarrier
// (mbarrier.cuh) as transaction bytes; the map is passed by its generic address (e.g. of a
// __grid_constant__ kernel parameter). Used by the attention decode ws kernel's key tiles.
#pragma once

#include <cstdint>

namespace dsv4::cuda::tma {

// Brings the tensor map at `map` into the TMA unit's descriptor cache ahead of its first copy.
__device__ __forceinline__ void prefetch_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

// One box of the 2-D tensor map at `map` at element coordinates (x, y), x the inner dimension,
// to this CTA's shared memory at dst (laid out by the map's swizzle), completing as transaction
// bytes on the mbarrier `bar`.
__device__ __forceinline__ void g2s_2d(uint32_t dst, const void* map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3}], [%4];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// One box of the 3-D tensor map at `map` at element coordinates (x, y, z), as g2s_2d.
__device__ __forceinline__ void g2s_3d(uint32_t dst, const void* map, int x, int y, int z,
                                       uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
}

}  // namespace dsv4::cuda::tma
