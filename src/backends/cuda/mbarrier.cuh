// Shared-memory mbarriers (sm_90) and named barriers for warp-specialized kernels: a producer
// warp fills a ring of shared-memory stages and consumers wait for them without a CTA-wide
// __syncthreads (attention_decode.cu, plan.producer).
//
// Phases: a barrier initialized with count n completes a phase after n arrivals; wait(parity)
// returns once the phase with that parity (0 for the first, 1 for the second, ...) has completed.
// arrive has release and a completed try_wait acquire semantics at CTA scope, so ordinary
// shared-memory writes before an arrival are visible to the threads that waited for its phase.
// The arrival on completion of a thread's cp.async copies is cp_async.cuh's
// cp_async_mbarrier_arrive_noinc.
#pragma once

#include <cstdint>

namespace dsv4::cuda::mbar {

__device__ __forceinline__ void init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void arrive(uint32_t bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar)
               : "memory");
}

__device__ __forceinline__ bool try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

// Non-blocking test of the phase with that parity (try_wait may suspend the thread for a
// system-dependent time limit before it returns false).
__device__ __forceinline__ bool test_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  while (!try_wait(bar, parity)) {
  }
}

// An arrival that also raises the current phase's expected transaction bytes by `bytes` (the
// phase completes once every arrival is in and that many bytes have landed).
__device__ __forceinline__ void arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile(
      "{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::
          "r"(bar),
      "r"(bytes)
      : "memory");
}

// Makes barrier initializations visible to the async proxy (bulk copies completing on them).
__device__ __forceinline__ void fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Bulk copy (the TMA engine, no tensor map) of `bytes` (a multiple of 16; both addresses 16-byte
// aligned) from global memory to this CTA's shared memory at dst, completing as transaction
// bytes on `bar`.
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void* src, uint32_t bytes,
                                         uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// bar.sync on named barrier `id` (1..15; 0 is __syncthreads) among `threads` threads (a multiple
// of 32): only the warps that take part wait for each other.
__device__ __forceinline__ void named_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// bar.arrive on named barrier `id`: counts this warp's arrival without waiting. With named_sync
// on the other side, a one-way hand-off: the arriving threads' earlier shared-memory writes are
// visible to the threads that complete the barrier in bar.sync.
__device__ __forceinline__ void named_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Warp-specialized register split (sm_90a): every warp of a warpgroup executes the same one; the
// kernel needs a register cap at entry (__launch_bounds__(threads, 1)), and each role should be
// one branch of an if / else so that ptxas compiles it under its new limit.
template <int regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(regs));
}
template <int regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(regs));
}

}  // namespace dsv4::cuda::mbar
