// Device pieces shared by the routed-expert kernels (moe.cu, moe_decode.cu, moe_prefill.cu): the
// clamped SwiGLU, the on-device grouping of (token, k) pairs by expert, the official order's FP8
// rounding of h and the combine of per-pair outputs in k order.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

// The CPU reference's expression and order: silu(min(g, L)) * clamp(u, -L, L), in two halves so
// that an epilogue can compute many values up to the division before any division
// (moe_prefill_wgmma_ws.cu, ws_store_tile): the same operations, so the same bits.
struct moe_swiglu_terms {
  float gc, uc, den;  // min(g, L), clamp(u, -L, L), 1 + exp(-gc)
};
__device__ __forceinline__ moe_swiglu_terms moe_swiglu_begin(float g, float u, float limit) {
  const float gc = fminf(g, limit);
  return {gc, fminf(fmaxf(u, -limit), limit), 1.0f + expf(-gc)};
}
__device__ __forceinline__ float moe_swiglu_end(const moe_swiglu_terms& t) {
  return t.gc / t.den * t.uc;
}
__device__ __forceinline__ float moe_swiglu_value(float g, float u, float limit) {
  return moe_swiglu_end(moe_swiglu_begin(g, u, limit));
}

// Run by one whole block (blockDim.x a multiple of 32, at most 1024): groups the `pairs` entries
// of `indices` (pair p = t * top_k + k; entries outside [0, experts) are left out) by expert.
// sorted[]: the pair ids, experts in increasing order, each expert's pairs contiguous (their order
// inside an expert is arbitrary: no arithmetic mixes pairs). chunks[]: (expert, first index into
// sorted, pair count <= chunk_pairs, 0) for every run of up to chunk_pairs pairs of one expert, in
// expert order; *chunk_count their number. Shared scratch: counts and offsets hold `experts` ints
// each, warp_sums 2 * 32 ints.
__device__ __forceinline__ void moe_group_pairs_by_expert(const int32_t* indices, int pairs,
                                                          int experts, int chunk_pairs,
                                                          int* chunk_count, int* sorted,
                                                          int4* chunks, int* counts, int* offsets,
                                                          int (*warp_sums)[32]) {
  const int tid = threadIdx.x, lane = tid % k_warp_size, warp = tid / k_warp_size;
  for (int e = tid; e < experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  for (int p = tid; p < pairs; p += blockDim.x) {
    const int e = indices[p];
    if (e >= 0 && e < experts) atomicAdd(&counts[e], 1);
  }
  __syncthreads();
  // Exclusive scans of the pair and chunk counts: each thread owns a contiguous run of experts,
  // the block scans the run totals (warp shuffles, then one warp over the warp totals).
  const int per = (experts + blockDim.x - 1) / blockDim.x;
  const int e_begin = min(experts, tid * per), e_end = min(experts, e_begin + per);
  int run_pairs = 0, run_chunks = 0;
  for (int e = e_begin; e < e_end; ++e) {
    run_pairs += counts[e];
    run_chunks += (counts[e] + chunk_pairs - 1) / chunk_pairs;
  }
  int inc_pairs = run_pairs, inc_chunks = run_chunks;
#pragma unroll
  for (int d = 1; d < k_warp_size; d *= 2) {
    const int a = __shfl_up_sync(0xffffffffu, inc_pairs, d);
    const int b = __shfl_up_sync(0xffffffffu, inc_chunks, d);
    if (lane >= d) inc_pairs += a, inc_chunks += b;
  }
  if (lane == k_warp_size - 1) warp_sums[0][warp] = inc_pairs, warp_sums[1][warp] = inc_chunks;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / k_warp_size;
    int wp = lane < warps ? warp_sums[0][lane] : 0;
    int wc = lane < warps ? warp_sums[1][lane] : 0;
#pragma unroll
    for (int d = 1; d < k_warp_size; d *= 2) {
      const int a = __shfl_up_sync(0xffffffffu, wp, d);
      const int b = __shfl_up_sync(0xffffffffu, wc, d);
      if (lane >= d) wp += a, wc += b;
    }
    if (lane < warps) {  // exclusive prefix of each warp
      warp_sums[0][lane] = wp - warp_sums[0][lane];
      warp_sums[1][lane] = wc - warp_sums[1][lane];
    }
    if (lane == warps - 1) *chunk_count = wc;
  }
  __syncthreads();
  int pos_pairs = warp_sums[0][warp] + inc_pairs - run_pairs;
  int pos_chunks = warp_sums[1][warp] + inc_chunks - run_chunks;
  for (int e = e_begin; e < e_end; ++e) {
    offsets[e] = pos_pairs;
    const int c = counts[e];
    for (int j = 0; j * chunk_pairs < c; ++j)
      chunks[pos_chunks + j] =
          make_int4(e, pos_pairs + j * chunk_pairs, min(chunk_pairs, c - j * chunk_pairs), 0);
    pos_pairs += c;
    pos_chunks += (c + chunk_pairs - 1) / chunk_pairs;
    counts[e] = 0;  // reused as the fill cursor below (this thread owns e)
  }
  __syncthreads();
  for (int p = tid; p < pairs; p += blockDim.x) {
    const int e = indices[p];
    if (e >= 0 && e < experts) sorted[offsets[e] + atomicAdd(&counts[e], 1)] = p;
  }
}

// Official order: h row of every pair with a valid expert FP8 fake-quantized per `block` values
// (the input quantization of the FP8/FP4 w2). One warp per (pair, block), 256 threads per CTA;
// rows of pairs with a bad expert index were never written and are left alone.
template <int block>
__global__ void __launch_bounds__(256)
    moe_quantize_h_kernel(float* h, const int32_t* indices, int64_t pairs, int64_t experts,
                          int64_t inter) {
  const int64_t blocks_per_row = (inter + block - 1) / block;
  const int64_t item = int64_t(blockIdx.x) * (256 / k_warp_size) + threadIdx.x / k_warp_size;
  if (item >= pairs * blocks_per_row) return;
  const int64_t p = item / blocks_per_row, b = item % blocks_per_row;
  const int32_t e = indices[p];
  if (e < 0 || e >= experts) return;
  const int64_t begin = b * block;
  quant::fp8_block_warp(h + p * inter + begin, inter - begin < block ? inter - begin : block);
}

// y[t, o] = sum_k weights[t, k] * out[t * top_k + k, o], k in order (as the CPU accumulates);
// weighted false (official order, weights already applied to h): plain sum in k order. NaN for a
// token with an expert index outside [0, experts). Grid-stride over tokens * hidden.
template <bool weighted, typename act_t>
__global__ void moe_combine_kernel(const float* out, const int32_t* indices, const float* weights,
                                   int64_t tokens, int top_k, int64_t experts, int64_t hidden,
                                   act_t* y) {
  const int64_t n = tokens * hidden;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / hidden, o = i % hidden;
    float acc = 0.0f;
    bool bad = false;
    for (int k = 0; k < top_k; ++k) {
      const int64_t p = t * top_k + k;
      const int32_t e = indices[p];
      if (e < 0 || e >= experts) {
        bad = true;
        continue;
      }
      if constexpr (weighted)
        acc += weights[p] * out[p * hidden + o];
      else
        acc += out[p * hidden + o];
    }
    y[i] = act_from_f32<act_t>(bad ? __uint_as_float(0x7fc00000u) : acc);
  }
}

// moe_combine_kernel's values (y[t, o] = the pairs' out rows summed in k order from 0.0f, weighted
// by weights[t, k] in the exact order; NaN for a token with an expert index outside
// [0, experts)), four outputs per thread: the token's
// top_k out rows read by independent 16-byte loads (all issued before the first add), one
// 16-byte (f32) or 8-byte (BF16) store. Grid: x = 256-thread blocks over hidden / 4, y = tokens
// (strided). launch_moe_combine takes moe_combine_kernel where top_k > k_combine_max_k, hidden % 4
// != 0 or out / y are not 16-byte / act4 aligned.
// Measured (PREFILL20, H200, official MXFP4 call at Flash T = 4096, stage breakdown of
// bench_moe_linear --w4a8-ab): 176 -> 72 us (moe_combine_kernel: one output per thread, a 64-bit
// division per output, one dependent index load before each out load); the call 1.009-1.018x.
constexpr int k_combine_max_k = 8;

template <bool weighted, typename act_t>
__global__ void __launch_bounds__(256)
    moe_combine4_kernel(const float* out, const int32_t* indices, const float* weights,
                        int64_t tokens, int top_k, int64_t experts, int64_t hidden, act_t* y) {
  const int64_t o = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (o >= hidden) return;
  for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
    bool bad = false;
    float w[k_combine_max_k];
#pragma unroll
    for (int k = 0; k < k_combine_max_k; ++k) {
      if (k < top_k) {
        const int32_t e = __ldg(indices + t * top_k + k);
        bad = bad || e < 0 || e >= experts;
        if constexpr (weighted) w[k] = __ldg(weights + t * top_k + k);
      }
    }
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (bad) {
      const float nan = __uint_as_float(0x7fc00000u);
      acc = make_float4(nan, nan, nan, nan);
    } else {
      float4 v[k_combine_max_k];
#pragma unroll
      for (int k = 0; k < k_combine_max_k; ++k)
        if (k < top_k)
          v[k] = __ldg(reinterpret_cast<const float4*>(out + (t * top_k + k) * hidden + o));
#pragma unroll
      for (int k = 0; k < k_combine_max_k; ++k) {
        if (k < top_k) {
          if constexpr (weighted) {
            acc.x += w[k] * v[k].x;
            acc.y += w[k] * v[k].y;
            acc.z += w[k] * v[k].z;
            acc.w += w[k] * v[k].w;
          } else {
            acc.x += v[k].x;
            acc.y += v[k].y;
            acc.z += v[k].z;
            acc.w += v[k].w;
          }
        }
      }
    }
    store_act4(y + t * hidden + o, acc);
  }
}

// The combine as both routed-expert paths launch it: official order (weights already in h) sums
// plainly, the exact order weights each pair. moe_combine4_kernel where it applies (four_wide:
// the prefill's A/B switch, moe_prefill_fp8.cuh, turns it off for the byte-for-byte reference),
// else moe_combine_kernel; both give the same values.
template <typename act_t>
cudaError_t launch_moe_combine(bool official, const float* out, const int32_t* indices,
                               const float* weights, int64_t tokens, int64_t top_k, int64_t experts,
                               int64_t hidden, act_t* y, cudaStream_t stream,
                               bool four_wide = true) {
  if (four_wide && top_k <= k_combine_max_k && hidden % 4 == 0 && act4_aligned<float>(out) &&
      act4_aligned<act_t>(y)) {
    const dim3 grid(unsigned(ceil_div(hidden / 4, 256)),
                    unsigned(std::min<int64_t>(tokens, 65535)));
    if (official)
      moe_combine4_kernel<false, act_t>
          <<<grid, 256, 0, stream>>>(out, indices, nullptr, tokens, int(top_k), experts, hidden, y);
    else
      moe_combine4_kernel<true, act_t>
          <<<grid, 256, 0, stream>>>(out, indices, weights, tokens, int(top_k), experts, hidden, y);
    return cudaGetLastError();
  }
  const int threads = 256;
  const unsigned blocks = grid_stride_blocks(tokens * hidden, threads);
  if (official)
    moe_combine_kernel<false, act_t><<<blocks, threads, 0, stream>>>(
        out, indices, nullptr, tokens, int(top_k), experts, hidden, y);
  else
    moe_combine_kernel<true, act_t><<<blocks, threads, 0, stream>>>(out, indices, weights, tokens,
                                                                    int(top_k), experts, hidden, y);
  return cudaGetLastError();
}

}  // namespace dsv4::cuda
