// Straight-line device code of a chosen size, for instruction-fetch measurements: a chain of N
// dependent IMADs (x = x * y + C_i, 16 bytes of SASS each, no loop, every constant distinct so
// that ptxas keeps every step). icache_probe times fetching such code; bench_moe_linear's
// --icache-cold runs it between decode calls to evict the SMs' instruction caches.
#pragma once

#include <cstdint>
#include <utility>

namespace bench {

template <uint32_t C>
__device__ __forceinline__ void mad_step(uint32_t& x, uint32_t y) {
  asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(y), "n"(C * 7919u + 1u));
}
template <uint32_t... I>
__device__ __forceinline__ void straight_body(uint32_t& x, uint32_t y,
                                              std::integer_sequence<uint32_t, I...>) {
  (mad_step<I>(x, y), ...);
}

// One warp per block runs N IMADs of straight-line code `reps` times (a loop around the body):
// N = 12288, reps = 1 executes 192 KB of distinct code (more than an SM's instruction caches
// hold, icache_probe: 64 KB stays cached, 128 KB does not); N = 256, reps = 48 as many IMADs
// from 4 KB of code.
template <uint32_t N>
__global__ void straight_code_kernel(const uint32_t* in, uint32_t* out, int reps) {
  uint32_t x = in[threadIdx.x], y = in[32 + threadIdx.x] | 1u;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) straight_body(x, y, std::make_integer_sequence<uint32_t, N>{});
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

}  // namespace bench
