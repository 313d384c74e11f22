// How the decode-path MoE launches hand work to each other beyond programmatic dependent launch
// (moe_decode_set_chain): the per-launch chain arguments, and the readiness counters that W2's
// blocks wait on (chain 16).
#pragma once

#include <cstdint>

namespace dsv4::cuda {

namespace {

// moe_decode_set_chain, per GEMM launch. qcnt (UP, official order; null = the quantize launch
// runs): the last block of a (chunk, 128-row group of h) quantizes that group of the chunk's hf
// rows, "last" by a counter per group that every block increments after its stores, a barrier
// and a fence (the release of cooperative groups' grid sync); counters zeroed by the prepare
// launch. early_chunk: the chunk is read together with the chunk count (one dependent L2 load
// fewer before the weight stream; a slot past the count reads a stale entry and exits).
// self_indices (chain 8, T = 1, pairs <= 8, bf16 x, the ring): no prepare launch; every warp
// derives its block's chunk from the routing (moe_decode_self_chunk) and the W1/W3 blocks read x
// itself (ain_hi: the raw bf16 row), converted into the staged row as the prepare launch would.
// Chain 16 (ready non-null; the GEMM kernels with SLOTS): W1/W3's fold releases each quantized
// 128-row group of h on ready[slot * k_ready_stride] (after its stores and a barrier, by a release
// reduction; the fold's count is an acq_rel RMW);
// the W2 blocks, once their first ring rounds are in flight, wait for their own slot's
// `ready_target` groups instead of griddepcontrol.wait for the whole W1/W3 grid (see
// wait_counter) and read h with coherent loads (load_act16); they exit without
// griddepcontrol.wait (the exception to pdl.cuh's contract, argued at the kernel's end).
// fold_waves: the fold at any wave count (its counters then live in the per-stream buffer, not in
// the workspace). stage_h1 (host side, chain 32): W2 stages h at T = 1 too.
struct chain_args {
  int* qcnt;
  int early_chunk;
  const int32_t* self_indices;
  int self_pairs, self_experts;
  int* ready;
  int ready_target;
  int fold_waves;
  int stage_h1;
};

// Counters polled by many blocks each own a 128-byte line.
constexpr int k_ready_stride = 32;

// Thread 0 waits (relaxed loads with backoff: an acquire load per poll would also invalidate the
// SM's L1 each time) until *counter reaches `target`, then reads it once more with an acquire load
// and the block proceeds past a barrier, so every thread's later loads see what the producers
// stored before their release: by read-read coherence the acquire load reads the count the spin
// saw or a later one, i.e. the last of the producers' release reductions, each of which continues
// the release sequences of the ones before. Its value is dead, so ptxas emits only the
// acquire's L1 invalidation (CCTL.IVALL, which the fence had too). MOE24 (H200, same process):
// cooperative groups' pattern instead (a fence after the spin: fence.sc, MEMBAR.SC.GPU) returned
// W2's median wait 0.5-1.0 us later at Flash T = 1; T = 1 speed of this acquire over it
// 1.004-1.010x (Flash), 0.993-1.006x (Pro).
__device__ __forceinline__ void wait_counter(const int* counter, int target) {
  if (threadIdx.x == 0) {
    int v, ns = 32;
    for (int spins = 0;; ++spins) {
      asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
      if (v >= target) break;
      // Seconds without progress: a broken invariant (counters not zero at the start, producer
      // blocks not resident). Fail the launch rather than hang the device.
      if (spins == (1 << 24)) __trap();
      __nanosleep(ns);
      ns = min(ns * 2, 512);
    }
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
  }
  __syncthreads();
}

__device__ __forceinline__ void bar_sync_threads(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace

}  // namespace dsv4::cuda
