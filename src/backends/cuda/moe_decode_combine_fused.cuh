// Chain 512 (moe_decode_set_chain; W2 of chain 16 only): the combine of launch 4 done by W2's own
// blocks, so that a call ends with W2 (no combine launch waiting for W2's completion).
//
// Per (token t, W2 row group bx) a counter in the per-stream buffer (chain_args::comb, [tokens]
// [gridDim.x]): every W2 block adds one per pair of its chunk (t = pair / top_k) after storing
// its out rows (acq_rel: release of the block's stores, ordered before thread 0 by the barrier;
// acquire of the others'). The block whose add completes t's count of valid pairs (expert index
// in range; pairs with a bad index are in no chunk) sums t's top_k out rows of its row group in k
// order, exactly as moe_decode_combine_kernel (official order: f32 adds from 0; NaN if any index
// of t is bad) and writes y. A token with no valid pair is in no chunk; the grid's last block
// (below) writes its NaN row.
//
// Counter zeroing: the block that completes a (token, row group) count resets that counter
// (no add of the call follows). Every W2 block, including those that exit early, adds one to
// comb_done once past its wait; the grid's last block (count = gridDim.x * gridDim.y) zeroes what
// the combine launch zeroed (chain_args::zero: the readiness and fold counters) and comb_done.
// Every update of those counters precedes that block's add: W1/W3's fold counts and releases
// precede the release that each W2 block of a valid slot waited for, and W2 blocks only read
// them. The next call touches the buffer only after its first launch's griddepcontrol.wait,
// i.e. after this grid has completed (pdl.cuh).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/moe_decode_chain.cuh"
#include "backends/cuda/moe_decode_common.cuh"

namespace dsv4::cuda {

namespace {

// Pairs of token t whose expert index is in [0, experts): the indices loaded 8 at a time (one L2
// latency per 8 instead of one per index).
__device__ __forceinline__ int comb_valid_pairs(const int32_t* indices, int64_t t, int top_k,
                                                int experts) {
  int n = 0;
  for (int k0 = 0; k0 < top_k; k0 += 8) {
    int32_t e[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = k0 + j < top_k ? __ldg(indices + t * top_k + k0 + j) : -1;
#pragma unroll
    for (int j = 0; j < 8; ++j) n += e[j] >= 0 && e[j] < experts ? 1 : 0;
  }
  return n;
}

__device__ __forceinline__ int atom_add_acq_rel(int* p, int v) {
  int before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(before)
               : "l"(p), "r"(v)
               : "memory");
  return before;
}

__device__ __forceinline__ void comb_store(const chain_args& ch, int64_t at, float v) {
  if (ch.comb_y_f32)
    static_cast<float*>(ch.comb_y)[at] = v;
  else
    static_cast<__nv_bfloat16*>(ch.comb_y)[at] = __float2bfloat16_rn(v);
}

// The duties of the grid's last block (threads 0 .. active - 1): the zeroing, and the NaN rows of
// tokens without a valid pair (bad input only; one thread per such token writes its row).
__device__ void comb_last_block(const chain_args& ch, int64_t rows, int top_k, int active) {
  for (int i = threadIdx.x; i < ch.n_zero; i += active) ch.zero[i] = 0;
  for (int64_t t = threadIdx.x; t < ch.comb_tokens; t += active)
    if (comb_valid_pairs(ch.comb_indices, t, top_k, ch.self_experts) == 0)
      for (int64_t r = 0; r < rows; ++r) comb_store(ch, t * rows + r, __uint_as_float(0x7fc00000u));
  bar_sync_threads(1, active);
  if (threadIdx.x == 0) *ch.comb_done = 0;
}

// A block that exits early (no chunk; all threads, named barrier 1): its comb_done count and, if
// it is the grid's last, the last block's duties.
__device__ void comb_block_done(const chain_args& ch, int64_t rows, int top_k, int active,
                                int* flag) {
  if (threadIdx.x == 0)
    *flag = atom_add_acq_rel(ch.comb_done, 1) == int(gridDim.x * gridDim.y) - 1;
  bar_sync_threads(1, active);
  if (*flag) comb_last_block(ch, rows, top_k, active);
}

// After the block's out stores (threads 0 .. active - 1; the block's rows are block_rows rows
// from blockIdx.x * block_rows). Warp 0 counts in one instruction: lane col < cz the pair's
// (token, row group) counter, lane 31 comb_done (its block count needs only the block past its
// wait); a lane that completes its token's count resets that counter (no add of this call
// follows; the last block no longer zeroes them). Then the combine of the tokens whose count
// this block completed (t's top_k rows loaded 8 at a time, then added in k order) and the last
// block's duties. pair_of / valid: the chunk's pairs and their tokens' valid pair counts (cz of
// them); flag: a shared int.
__device__ void comb_after_stores(const chain_args& ch, const float* out, int64_t rows,
                                  int64_t block_rows, int top_k, int cz, const int* pair_of,
                                  const int* valid, int active, int* flag) {
  bar_sync_threads(1, active);  // every out store of the block
  const int64_t gx = gridDim.x, bx = blockIdx.x;
  if (threadIdx.x < k_warp_size) {
    const int lane = threadIdx.x;
    bool hit = false;
    if (lane < cz) {
      int* const counter = ch.comb + int64_t(pair_of[lane] / top_k) * gx + bx;
      hit = atom_add_acq_rel(counter, 1) == valid[lane] - 1;
      if (hit) *counter = 0;
    } else if (lane == k_warp_size - 1) {
      hit = atom_add_acq_rel(ch.comb_done, 1) == int(gridDim.x * gridDim.y) - 1;
    }
    const unsigned m = __ballot_sync(0xFFFFFFFFu, hit);
    if (lane == 0) *flag = int(m);
  }
  bar_sync_threads(1, active);
  const unsigned m = unsigned(*flag);
  const int64_t row0 = bx * block_rows;
  for (int col = 0; col < cz; ++col) {
    if (!(m >> col & 1)) continue;
    const int64_t t = pair_of[col] / top_k;
    const bool bad = valid[col] < top_k;
    for (int64_t r = threadIdx.x; r < block_rows; r += active) {
      const int64_t row = row0 + r;
      float acc = 0.0f;
      if (!bad)
        for (int k0 = 0; k0 < top_k; k0 += 8) {
          float v[8];  // L2 reads: other blocks stored these rows
#pragma unroll
          for (int j = 0; j < 8; ++j)
            v[j] = k0 + j < top_k ? __ldcg(out + (t * top_k + k0 + j) * rows + row) : 0.0f;
#pragma unroll
          for (int j = 0; j < 8; ++j)
            if (k0 + j < top_k) acc = __fadd_rn(acc, v[j]);
        }
      comb_store(ch, t * rows + row, bad ? __uint_as_float(0x7fc00000u) : acc);
    }
  }
  if (m >> (k_warp_size - 1) & 1) comb_last_block(ch, rows, top_k, active);
}

}  // namespace

}  // namespace dsv4::cuda
