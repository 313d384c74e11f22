// Diagnostic (session 35): does compute-sanitizer racecheck report buffer reuse that is ordered
// only through an arrive (bar.arrive of a named barrier, or an mbarrier arrive) as a hazard?
//
// l35c / l35e (H200, bench/RESULTS.md session 35): racecheck reported 48 errors (155648 hazards
// per instruction pair) in the warp-specialized decode attention kernel (alternate tiles) on the
// cases whose CTAs run 20 key tiles (attention_decode_fold, sms=4), none on cases of 1-3 tiles
// per CTA. The SASS pairs are (a) the partner's LDS of the P / (m, l) hand-off buffer of tile j
// (after BAR.SYNC) against the owner's STS into the same buffer for tile j + 2 (before BAR.ARV):
// the reuse is ordered by the partner's bar.arrive of tile j + 1's barrier, which the owner's
// bar.sync of that barrier waits for; (b) the consumers' LDS of a stage's mask word (after the
// full mbarrier's wait) against the producer's STS of that word for the stage's next tile (after
// the empty mbarrier's wait, which the consumers' arrivals complete). Both orderings are the PTX
// memory model's (barrier.cta.arrive and mbarrier.arrive have release semantics for the
// arriving thread's prior accesses; the waits acquire).
//
// This file runs both patterns alone, with nothing else in the kernel:
//   handoff: warps 0 and 1 alternate as owner / partner over n steps; the owner of step k writes
//            buf[k & 1], bar.arrive(1 + (k & 1), 64); the partner bar.sync(1 + (k & 1), 64), reads.
//   ring:    thread 0 of warp 0 produces a word per step into stage k % 4 after waiting on the
//            stage's empty mbarrier, then arrives on its full mbarrier; warp 1 waits on full,
//            reads the word, arrives on empty (every lane, or lane 0 after __syncwarp: the
//            attention kernel's release).
// Both write what they read to global memory (checked on the host), so nothing is optimized out.
// If racecheck reports hazards here, its reports on the attention kernel's reuse are this tool
// limitation, not a race.
// Build and run (sm_90a), from the repository root:
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -Isrc
//   scripts/diag/racecheck_arrive_reuse.cu -o racecheck_arrive_reuse
//   compute-sanitizer --tool racecheck ./racecheck_arrive_reuse
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "backends/cuda/mbarrier.cuh"

namespace mbar = dsv4::cuda::mbar;

constexpr int k_steps = 20;

__global__ void handoff_kernel(int* out) {
  __shared__ int buf[2][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int k = 0; k < k_steps; ++k) {
    const int b = k & 1;
    if ((k & 1) == warp) {  // owner of step k
      buf[b][lane] = 1000 * k + lane;
      mbar::named_arrive(1 + b, 64);
    } else {
      mbar::named_sync(1 + b, 64);
      out[k * 32 + lane] = buf[b][lane];
    }
  }
}

// warp_release: the consumer warp releases a stage by one arrival of lane 0 after __syncwarp (the
// attention kernel's release(); empty count 1) instead of one arrival per lane.
template <bool warp_release>
__global__ void ring_kernel(int* out) {
  constexpr int stages = 4;
  __shared__ int word[stages];
  __shared__ alignas(8) unsigned long long bars[2 * stages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t full = uint32_t(__cvta_generic_to_shared(&bars[0]));
  const uint32_t empty = full + 8 * stages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar::init(full + 8 * s, 1);
      mbar::init(empty + 8 * s, warp_release ? 1 : 32);
    }
    mbar::fence_init();
  }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0)
      for (int k = 0; k < k_steps; ++k) {
        const int s = k % stages;
        if (k >= stages) mbar::wait(empty + 8 * s, uint32_t(k / stages - 1) & 1u);
        word[s] = 7 * k + 1;
        mbar::arrive(full + 8 * s);
      }
  } else {
    for (int k = 0; k < k_steps; ++k) {
      const int s = k % stages;
      mbar::wait(full + 8 * s, uint32_t(k / stages) & 1u);
      const int v = word[s];
      if (warp_release) {
        __syncwarp();
        if (lane == 0) mbar::arrive(empty + 8 * s);
      } else {
        mbar::arrive(empty + 8 * s);
      }
      out[k * 32 + lane] = v;
    }
  }
}

int main() {
  int* d = nullptr;
  if (cudaMalloc(&d, k_steps * 32 * sizeof(int)) != cudaSuccess) return 2;
  std::vector<int> h(k_steps * 32);
  int bad = 0;
  handoff_kernel<<<1, 64>>>(d);
  cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
  for (int k = 0; k < k_steps; ++k)
    for (int l = 0; l < 32; ++l) bad += h[k * 32 + l] != 1000 * k + l;
  std::printf("handoff: %d wrong values\n", bad);
  int bad2 = 0;
  for (const bool warp_release : {false, true}) {
    if (warp_release)
      ring_kernel<true><<<1, 64>>>(d);
    else
      ring_kernel<false><<<1, 64>>>(d);
    cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
    int b = 0;
    for (int k = 0; k < k_steps; ++k)
      for (int l = 0; l < 32; ++l) b += h[k * 32 + l] != 7 * k + 1;
    std::printf("ring (%s release): %d wrong values\n", warp_release ? "per-warp" : "per-lane", b);
    bad2 += b;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("status: %s\n", cudaGetErrorString(e));
  cudaFree(d);
  return bad || bad2 || e != cudaSuccess ? 1 : 0;
}
