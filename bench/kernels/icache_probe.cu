// Session 44: what fetching a kernel's instructions costs when they are not cached. l44f's
// unrolled ring loops (kernel 3768 -> 8192 instructions, the round's instruction count 2% lower)
// cost the MoE decode a roughly fixed 15-21 us per call at T <= 4; this probe measures the
// instruction fetch alone. One warp per block runs N dependent IMADs of straight-line code
// (16 bytes each, no loop) twice: pass 0 fetches the code, pass 1 runs it again from the SM's
// instruction caches; pass 0 - pass 1 is the fetch's cost. Scenarios: the code evicted from L2
// first (bench::fill writes 4x the L2's size with normal stores, as the decode's weight stream
// displaces lines between launches of the same kernel; bench::read_kernel's evict-first loads
// would leave the code in place; session 45, l45c: the pass leaves the L2 dirty, and that
// write-back alone cost a following decode call 6-11 us, so the "L2 evicted" figures are upper
// bounds), and the same launch repeated at once (code still in L2). Session 45 (l45a): 4-64 KB
// stayed in the SMs across launches, 128 KB did not (0.045 us per KB after the store pass, ~0 from
// L2). Blocks: one per SM, or four per SM (the warps of an SM fetch the same lines). Standalone:
// nvcc -O3 -std=c++20 -arch=sm_90a -o icache_probe icache_probe.cu Output: per size and scenario,
// over blocks, the median and max of pass 0 and pass 1 (us, from %globaltimer) and (pass 0 - pass
// 1) / code KB. A probe of the hardware, not of an engine kernel.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "bench_common.cuh"
#include "straight_code.cuh"

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// t: per block, pass 0 and pass 1 durations (ns). The __syncwarp and the timer reads bracket the
// body; the second pass reuses the same instructions (a loop of two iterations around them).
template <uint32_t N>
__global__ void straight_kernel(const uint32_t* in, uint32_t* out, unsigned long long* t) {
  uint32_t x = in[threadIdx.x], y = in[32 + threadIdx.x] | 1u;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    __syncwarp();
    const unsigned long long t0 = now_ns();
    bench::straight_body(x, y, std::make_integer_sequence<uint32_t, N>{});
    __syncwarp();
    const unsigned long long t1 = now_ns();
    if (threadIdx.x == 0) t[2 * blockIdx.x + pass] = t1 - t0;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

template <uint32_t N>
void run_size(int sms, const uint32_t* in, uint32_t* out, unsigned long long* t, void* flush,
              size_t flush_bytes) {
  const double kb = N * 16.0 / 1024.0;
  for (int per_sm : {1, 4}) {
    const int blocks = sms * per_sm;
    for (int scenario = 0; scenario < 2; ++scenario) {
      std::vector<double> p0_med, p1_med, p0_max;
      for (int rep = 0; rep < 5; ++rep) {
        if (scenario == 0)
          bench::fill(flush, flush_bytes, 44u + rep, 0);
        else
          straight_kernel<N><<<blocks, 32>>>(in, out, t);  // the code into L2 first
        straight_kernel<N><<<blocks, 32>>>(in, out, t);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<unsigned long long> h(2 * blocks);
        CK(cudaMemcpy(h.data(), t, h.size() * 8, cudaMemcpyDeviceToHost));
        std::vector<double> a, b;
        for (int i = 0; i < blocks; ++i) {
          a.push_back(h[2 * i] / 1e3);
          b.push_back(h[2 * i + 1] / 1e3);
        }
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        p0_med.push_back(a[a.size() / 2]);
        p0_max.push_back(a.back());
        p1_med.push_back(b[b.size() / 2]);
      }
      std::sort(p0_med.begin(), p0_med.end());
      std::sort(p1_med.begin(), p1_med.end());
      std::sort(p0_max.begin(), p0_max.end());
      const double m0 = p0_med[2], m1 = p1_med[2], x0 = p0_max[2];
      printf(
          "%6u IMAD %7.1f KB  %d block/SM  %-12s pass0 med %8.3f max %8.3f us  pass1 med %8.3f us"
          "  fetch %7.3f us = %6.3f us/KB\n",
          N, kb, per_sm, scenario == 0 ? "L2 evicted" : "L2 warm", m0, x0, m1, m0 - m1,
          (m0 - m1) / kb);
    }
  }
}

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("icache_probe: %s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);
  const size_t flush_bytes = size_t(prop.l2CacheSize) * 4;
  void* flush;
  uint32_t *in, *out;
  unsigned long long* t;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&in, 64 * 4));
  std::vector<uint32_t> hin(64);
  for (int i = 0; i < 64; ++i) hin[i] = 0x12345u * (i + 1);
  CK(cudaMemcpy(in, hin.data(), 64 * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&out, size_t(sms) * 4 * 32 * 4));
  CK(cudaMalloc(&t, size_t(sms) * 4 * 2 * 8));
  run_size<256>(sms, in, out, t, flush, flush_bytes);
  run_size<1024>(sms, in, out, t, flush, flush_bytes);
  run_size<4096>(sms, in, out, t, flush, flush_bytes);
  run_size<8192>(sms, in, out, t, flush, flush_bytes);
  return 0;
}
