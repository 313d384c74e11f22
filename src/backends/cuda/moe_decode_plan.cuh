// Launch 1 of the decode-path MoE (moe_decode.cu): the plan (pairs grouped by expert into chunks
// of up to k_chunk pairs) and the activation prepare, and the one-warp plan that chain 8's GEMM
// blocks derive their chunk with instead (moe_decode_self_chunk).
#pragma once

#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// The routing of up to 32 pairs as one whole warp sees it (lane p holds pair p): lanes grouped
// by expert with __match_any_sync. Shared by the one-warp plan and the chain-8 chunk derivation,
// so that both group (and so cut chunks) alike.
struct warp_expert_groups {
  int e;           // indices[lane] (-1 past `pairs`)
  int key;         // e, or for an invalid lane a key of its own above every expert
  bool valid;      // e in [0, experts)
  unsigned vmask;  // lanes with a valid expert
  unsigned same;   // valid lanes of this lane's expert
};  // the leader: expert_leader (computed in the struct, it changed the prepare kernel's SASS)
__device__ __forceinline__ warp_expert_groups group_lanes_by_expert(const int32_t* indices,
                                                                    int pairs, int experts) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x % k_warp_size;
  const int e = lane < pairs ? indices[lane] : -1;
  const bool valid = e >= 0 && e < experts;
  const unsigned vmask = __ballot_sync(full, valid);
  const int key = valid ? e : experts + lane;  // so invalid lanes match no other lane
  const unsigned same = __match_any_sync(full, key) & vmask;
  return {e, key, valid, vmask, same};
}
// The lowest lane of its expert (valid lanes only): the lane that writes its expert's chunks.
__device__ __forceinline__ bool expert_leader(const warp_expert_groups& g) {
  return g.valid && int(threadIdx.x % k_warp_size) == __ffs(g.same) - 1;
}

// moe_plan.cuh's moe_group_pairs_by_expert for pairs <= 32, run by one whole warp: the same
// sorted[] / chunks[] / *chunk_count (pairs of one expert in increasing p), without shared memory
// or block barriers. Pair p's position: the valid pairs of smaller experts, then those of its own
// expert before it; its expert's first chunk: the chunks of the smaller experts.
__device__ __forceinline__ void moe_group_pairs_by_expert_warp(const int32_t* indices, int pairs,
                                                               int experts, int chunk_pairs,
                                                               int* chunk_count, int* sorted,
                                                               int4* chunks) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x % k_warp_size;
  const warp_expert_groups g = group_lanes_by_expert(indices, pairs, experts);
  const int count = __popc(g.same);
  const bool leader = expert_leader(g);
  const int my_chunks = leader ? (count + chunk_pairs - 1) / chunk_pairs : 0;
  int pairs_before = 0, chunks_before = 0;
#pragma unroll
  for (int j = 0; j < k_warp_size; ++j) {
    const int kj = __shfl_sync(full, g.key, j);
    const int cj = __shfl_sync(full, my_chunks, j);
    if (kj < g.key) {
      pairs_before += (g.vmask >> j) & 1u;
      chunks_before += cj;
    }
  }
  if (g.valid) sorted[pairs_before + __popc(g.same & ((1u << lane) - 1u))] = lane;
  for (int j = 0; j < my_chunks; ++j)
    chunks[chunks_before + j] = make_int4(g.e, pairs_before + j * chunk_pairs,
                                          min(chunk_pairs, count - j * chunk_pairs), 0);
  const int total = __reduce_add_sync(full, my_chunks);
  if (lane == 0) *chunk_count = total;
}

// Chain 8: the chunk of slot `slot`, derived by one whole warp from the routing of one token
// instead of read from a plan. pairs <= k_chunk, so each distinct valid expert is one chunk and
// slot s is the expert of rank s among them, the chunks[] order of both plans. mask: the chunk's
// pair positions (the block plan's sorted[] may list them in another order, which changes no
// sum: each pair is an mma column of its own). False (warp-uniform) past the chunk count.
__device__ __forceinline__ bool moe_decode_self_chunk(const int32_t* indices, int pairs,
                                                      int experts, int slot, int& e,
                                                      unsigned& mask) {
  const unsigned full = 0xffffffffu;
  const warp_expert_groups g = group_lanes_by_expert(indices, pairs, experts);
  const bool leader = expert_leader(g);
  const unsigned leaders = __ballot_sync(full, leader);
  int before = 0;  // chunks (distinct valid experts) below this lane's expert
#pragma unroll
  for (int j = 0; j < k_chunk; ++j)
    before += ((leaders >> j) & 1u) && __shfl_sync(full, g.key, j) < g.key;
  const unsigned hit = __ballot_sync(full, leader && before == slot);
  if (!hit) return false;
  const int at = __ffs(hit) - 1;
  e = __shfl_sync(full, g.key, at);
  mask = __shfl_sync(full, g.same, at);
  return true;
}

// Chain 8: position i (< the chunk's pair count) of the chunk whose pairs are `mask`'s bits.
__device__ __forceinline__ int self_chunk_pair(unsigned mask, int i) {
  return int(__fns(mask, 0, i + 1));
}

// moe_decode_set_chain: block 0 also zeroes the `n_zero` counters at `zero` (quantization folded
// into W1/W3) and plans with one warp (warp_plan: pairs <= 32; run() takes it up to 8).
template <typename act_t>
__global__ void __launch_bounds__(k_plan_threads)
    moe_decode_prepare_kernel(const int32_t* indices, int pairs, int experts, int* chunk_count,
                              int* sorted, int4* chunks, const act_t* x, int64_t x_count,
                              uint16_t* xhi, uint16_t* xlo, int* zero, int n_zero, int warp_plan) {
  pdl_trigger();  // L1 may start; it waits for this grid before reading the plan
  if (blockIdx.x > 0) {
    // Groups of 8 activations of one row (cols % 8 == 0): 4 paired words of hi (and lo).
    const int64_t grp = (int64_t(blockIdx.x) - 1) * blockDim.x + threadIdx.x;
    if (grp * 8 >= x_count) return;
    uint4 h, l;
    split_group8([&](int j) { return act_to_f32(x[grp * 8 + j]); }, h, l);
    const int64_t at = act_group_slot(grp);
    reinterpret_cast<uint4*>(xhi)[at] = h;
    reinterpret_cast<uint4*>(xlo)[at] = l;
    return;
  }
  __shared__ int counts[k_max_experts];
  __shared__ int offset[k_max_experts];
  __shared__ int warp_sums[2][32];
  for (int i = threadIdx.x; i < n_zero; i += blockDim.x) zero[i] = 0;
  if (warp_plan) {  // pairs <= 8 (run())
    if (threadIdx.x < k_warp_size)
      moe_group_pairs_by_expert_warp(indices, pairs, experts, k_chunk, chunk_count, sorted, chunks);
    return;
  }
  moe_group_pairs_by_expert(indices, pairs, experts, k_chunk, chunk_count, sorted, chunks, counts,
                            offset, warp_sums);
}

}  // namespace

}  // namespace dsv4::cuda
