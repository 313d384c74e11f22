// Router and routed experts (see moe.h).
//
// moe_experts, first version (correct, deterministic, no per-expert launches):
//   1. moe_plan_kernel (one block): counts the (token, k) pairs per expert, lays the pairs out
//      grouped by expert (`sorted`) and cuts each expert's pairs into chunks of up to NT pairs
//      (`chunks`: expert, first position in `sorted`, pair count). The chunk count stays on the
//      device; the launches below size their grid by its upper bound and idle blocks exit.
//   2. moe_gate_up_kernel: per chunk, each warp streams rows i, i+1 of W1_e and W3_e once for the
//      chunk's pairs and writes h[pair, i] = silu(min(g, L)) * clamp(u, -L, L).
//   3. moe_down_kernel: per chunk, out[pair, :] = W2_e h[pair, :].
//   4. moe_combine_kernel: y[t] = sum over k in order of weights[t, k] * out[t * top_k + k].
// Every pair's sums depend only on that pair's data (the order of pairs inside an expert's list
// comes from atomics, but no arithmetic mixes pairs), so results are bitwise reproducible.
#include <cmath>

#include "backends/cuda/moe.h"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/quantize.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

namespace {

using detail::row_ref;
using detail::weight_args;

constexpr int k_moe_warps = 4;
constexpr int k_moe_threads = k_moe_warps * k_warp_size;
constexpr int k_moe_rows = 4;  // weight rows per warp (L1: 2 rows of W1 + the same 2 of W3)
constexpr int k_plan_threads = 1024;
constexpr int64_t k_plan_max_experts = 2048;  // 2 int arrays of E in static shared memory
constexpr int k_route_threads = 256;

size_t align_256(size_t n) {
  return (n + 255) / 256 * 256;
}

// Pairs per chunk: one decode token touches each expert at most once, so small steps use small
// chunks (fewer accumulators); larger steps use 16.
int moe_chunk_pairs(int64_t tokens) {
  return tokens <= 1 ? 1 : tokens <= 4 ? 4 : 16;
}

// Upper bound of the chunk count: sum_e ceil(c_e / nt) <= pairs / nt + #experts with pairs.
int64_t moe_max_chunks(int64_t pairs, int64_t experts, int nt) {
  return pairs / nt + std::min(pairs, experts);
}

struct moe_layout {
  size_t count_offset = 0, sorted_offset, chunks_offset, h_offset, out_offset, total;
};

moe_layout moe_workspace_layout(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                int64_t inter) {
  const int64_t pairs = tokens * top_k;
  const int64_t max_chunks = moe_max_chunks(pairs, experts, moe_chunk_pairs(tokens));
  moe_layout l;
  l.sorted_offset = 256;
  l.chunks_offset = l.sorted_offset + align_256(size_t(pairs) * 4);
  l.h_offset = l.chunks_offset + align_256(size_t(max_chunks) * sizeof(int4));
  l.out_offset = l.h_offset + align_256(size_t(pairs) * size_t(inter) * 4);
  l.total = l.out_offset + align_256(size_t(pairs) * size_t(hidden) * 4);
  return l;
}

__global__ void __launch_bounds__(k_plan_threads)
    moe_plan_kernel(const int32_t* indices, int pairs, int experts, int nt, int* chunk_count,
                    int* sorted, int4* chunks) {
  __shared__ int counts[k_plan_max_experts];
  __shared__ int pair_offset[k_plan_max_experts];
  __shared__ int warp_sums[2][32];
  moe_group_pairs_by_expert(indices, pairs, experts, nt, chunk_count, sorted, chunks, counts,
                            pair_offset, warp_sums);
}

// Grid: x = blocks of k_moe_warps * 2 intermediate rows, y = chunk slots.
template <typename act_t, weight_kind K, int NT>
__global__ void __launch_bounds__(k_moe_threads)
    moe_gate_up_kernel(const act_t* x, int64_t hidden, int top_k, const int* chunk_count,
                       const int4* chunks, const int* sorted, weight_args w1, weight_args w3,
                       float limit, const float* pair_weights, float* h, int64_t inter,
                       bool vector_path) {
  __shared__ const act_t* xrow[NT];
  __shared__ int pair_of[NT];
  const int slot = blockIdx.y;
  if (slot >= *chunk_count) return;  // uniform over the block
  const int4 c = chunks[slot];
  if (threadIdx.x < NT) {
    const int p = sorted[c.y + min(int(threadIdx.x), c.z - 1)];
    pair_of[threadIdx.x] = p;
    xrow[threadIdx.x] = x + int64_t(p / top_k) * hidden;
  }
  __syncthreads();
  constexpr int half = k_moe_rows / 2;
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int64_t i0 = (int64_t(blockIdx.x) * k_moe_warps + warp) * half;
  if (i0 >= inter) return;
  row_ref rows[k_moe_rows];
#pragma unroll
  for (int r = 0; r < half; ++r) {
    if (i0 + r < inter) {
      rows[r] = detail::locate_row<K>(w1, c.x, i0 + r);
      rows[half + r] = detail::locate_row<K>(w3, c.x, i0 + r);
    }
  }
  float acc[k_moe_rows][NT];
  detail::warp_rows_dot<K, k_moe_rows, NT>(rows, hidden, xrow, c.z, w1.scale_e8m0, vector_path,
                                           acc);
#pragma unroll
  for (int r = 0; r < half; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (lane == (r * NT + t) % k_warp_size && t < c.z && i0 + r < inter) {
        const float v = moe_swiglu_value(acc[r][t], acc[half + r][t], limit);
        // Official order: the routing weight scales h before the quantized w2 (null: exact).
        h[int64_t(pair_of[t]) * inter + i0 + r] =
            pair_weights ? __fmul_rn(v, pair_weights[pair_of[t]]) : v;
      }
}

// Grid: x = blocks of k_moe_warps * k_moe_rows output rows, y = chunk slots.
template <weight_kind K, int NT>
__global__ void __launch_bounds__(k_moe_threads)
    moe_down_kernel(const float* h, int64_t inter, const int* chunk_count, const int4* chunks,
                    const int* sorted, weight_args w2, float* out, int64_t hidden,
                    bool vector_path) {
  __shared__ const float* xrow[NT];
  __shared__ int pair_of[NT];
  const int slot = blockIdx.y;
  if (slot >= *chunk_count) return;
  const int4 c = chunks[slot];
  if (threadIdx.x < NT) {
    const int p = sorted[c.y + min(int(threadIdx.x), c.z - 1)];
    pair_of[threadIdx.x] = p;
    xrow[threadIdx.x] = h + int64_t(p) * inter;
  }
  __syncthreads();
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int64_t o0 = (int64_t(blockIdx.x) * k_moe_warps + warp) * k_moe_rows;
  if (o0 >= hidden) return;
  row_ref rows[k_moe_rows];
#pragma unroll
  for (int r = 0; r < k_moe_rows; ++r)
    if (o0 + r < hidden) rows[r] = detail::locate_row<K>(w2, c.x, o0 + r);
  float acc[k_moe_rows][NT];
  detail::warp_rows_dot<K, k_moe_rows, NT>(rows, inter, xrow, c.z, w2.scale_e8m0, vector_path, acc);
#pragma unroll
  for (int r = 0; r < k_moe_rows; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (lane == (r * NT + t) % k_warp_size && t < c.z && o0 + r < hidden)
        out[int64_t(pair_of[t]) * hidden + o0 + r] = acc[r][t];
}

// (value, index) argmax step: larger value wins, equal values go to the lower index.
__device__ __forceinline__ void argmax_merge(float& v, int& i, float ov, int oi) {
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

__device__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
#pragma unroll
  for (int d = k_warp_size / 2; d > 0; d /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x / k_warp_size) ? scratch[lane] : -INFINITY;
#pragma unroll
  for (int d = k_warp_size / 2; d > 0; d /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
  __syncthreads();
  return v;
}

// One block per token. Dynamic shared memory: scores [E] f32, then taken flags [E] bytes. (A
// warp-per-token version without block barriers measured 1.1x slower on the H200 at T = 1 and 64,
// E = 256 / 384: its lanes scan E / 32 shared-memory keys per pick.)
__global__ void __launch_bounds__(k_route_threads)
    moe_route_select_kernel(const float* logits, int experts, const float* bias,
                            const int32_t* tid2eid, int64_t vocab, const int32_t* ids, int score,
                            int top_k, bool normalize, float route_scale, int32_t* indices,
                            float* weights) {
  extern __shared__ float scores[];
  unsigned char* taken = reinterpret_cast<unsigned char*>(scores + experts);
  __shared__ float scratch[k_warp_size];
  __shared__ float best_v[k_warp_size];
  __shared__ int best_i[k_warp_size];
  __shared__ int chosen[k_moe_max_top_k];
  const int64_t t = blockIdx.x;
  const float* l = logits + t * experts;
  const int tid = threadIdx.x;
  const int lane = tid % k_warp_size, warp = tid / k_warp_size;
  const int warps = blockDim.x / k_warp_size;
  if (score == int(moe_score::softmax)) {
    float mx = -INFINITY;
    for (int e = tid; e < experts; e += blockDim.x) mx = fmaxf(mx, l[e]);
    mx = block_max(mx, scratch);
    float sum = 0.0f;
    for (int e = tid; e < experts; e += blockDim.x) {
      const float v = expf(l[e] - mx);
      scores[e] = v;
      sum += v;
    }
    sum = block_sum(sum, scratch);
    for (int e = tid; e < experts; e += blockDim.x) scores[e] /= sum;
  } else {
    for (int e = tid; e < experts; e += blockDim.x) {
      const float v = l[e];
      scores[e] = score == int(moe_score::sigmoid)
                      ? 1.0f / (1.0f + expf(-v))
                      : sqrtf(v > 20.0f ? v : log1pf(expf(v)));  // softplus threshold 20
    }
  }
  for (int e = tid; e < experts; e += blockDim.x) taken[e] = 0;
  __syncthreads();

  if (tid2eid) {
    if (tid < top_k) {
      const int32_t id = ids[t];
      chosen[tid] = id >= 0 && id < vocab ? tid2eid[int64_t(id) * top_k + tid] : -1;
    }
  } else {
    for (int j = 0; j < top_k; ++j) {
      float v = -INFINITY;
      int i = INT32_MAX;
      for (int e = tid; e < experts; e += blockDim.x)
        if (!taken[e]) argmax_merge(v, i, scores[e] + (bias ? bias[e] : 0.0f), e);
#pragma unroll
      for (int d = k_warp_size / 2; d > 0; d /= 2) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, d);
        const int oi = __shfl_xor_sync(0xffffffffu, i, d);
        argmax_merge(v, i, ov, oi);
      }
      if (lane == 0) {
        best_v[warp] = v;
        best_i[warp] = i;
      }
      __syncthreads();
      if (tid == 0) {
        for (int w = 1; w < warps; ++w) argmax_merge(v, i, best_v[w], best_i[w]);
        // All remaining scores NaN: nothing to pick (the CPU's order is undefined there too).
        chosen[j] = i < experts ? i : -1;
        if (i < experts) taken[i] = 1;
      }
      __syncthreads();
    }
  }
  __syncthreads();
  if (tid == 0) {
    const float nan = __uint_as_float(0x7fc00000u);
    float w[k_moe_max_top_k];
    float sum = 0.0f;
    for (int j = 0; j < top_k; ++j) {
      const int e = chosen[j];
      w[j] = e >= 0 && e < experts ? scores[e] : nan;
      sum += w[j];
    }
    for (int j = 0; j < top_k; ++j) {
      indices[t * top_k + j] = chosen[j];
      weights[t * top_k + j] = (normalize ? w[j] / (sum + 1e-20f) : w[j]) * route_scale;
    }
  }
}

template <typename act_t, weight_kind K, int NT>
cudaError_t launch_experts(const act_t* x, int64_t tokens, int64_t top_k, const device_weight& w1,
                           const device_weight& w3, const device_weight& w2, float limit,
                           const int* chunk_count, const int4* chunks, const int* sorted,
                           int64_t max_chunks, const float* pair_weights, const int32_t* indices,
                           float* h, float* out, cudaStream_t stream) {
  const int64_t hidden = w1.cols, inter = w1.rows;
  const bool vec1 = detail::vector_path_ok(w1, x, hidden) && detail::vector_path_ok(w3, x, hidden);
  // h rows start at pair * inter floats inside a 256-aligned workspace region.
  const bool vec2 = detail::vector_path_ok(w2, h, inter);
  const dim3 grid1(unsigned(ceil_div(inter, k_moe_warps * (k_moe_rows / 2))), unsigned(max_chunks));
  moe_gate_up_kernel<act_t, K, NT><<<grid1, k_moe_threads, 0, stream>>>(
      x, hidden, int(top_k), chunk_count, chunks, sorted, detail::make_weight_args(w1),
      detail::make_weight_args(w3), limit, pair_weights, h, inter, vec1);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (pair_weights) {  // official order
    const int64_t pairs = tokens * top_k;
    const int64_t items = pairs * ceil_div(inter, 128);
    moe_quantize_h_kernel<128><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
        h, indices, pairs, w1.count, inter);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const dim3 grid2(unsigned(ceil_div(hidden, k_moe_warps * k_moe_rows)), unsigned(max_chunks));
  moe_down_kernel<K, NT><<<grid2, k_moe_threads, 0, stream>>>(
      h, inter, chunk_count, chunks, sorted, detail::make_weight_args(w2), out, hidden, vec2);
  return cudaGetLastError();
}

template <typename act_t, weight_kind K>
cudaError_t launch_experts_nt(int nt, const act_t* x, int64_t tokens, int64_t top_k,
                              const device_weight& w1, const device_weight& w3,
                              const device_weight& w2, float limit, const int* chunk_count,
                              const int4* chunks, const int* sorted, int64_t max_chunks,
                              const float* pair_weights, const int32_t* indices, float* h,
                              float* out, cudaStream_t stream) {
  if (nt == 1)
    return launch_experts<act_t, K, 1>(x, tokens, top_k, w1, w3, w2, limit, chunk_count, chunks,
                                       sorted, max_chunks, pair_weights, indices, h, out, stream);
  if (nt == 4)
    return launch_experts<act_t, K, 4>(x, tokens, top_k, w1, w3, w2, limit, chunk_count, chunks,
                                       sorted, max_chunks, pair_weights, indices, h, out, stream);
  return launch_experts<act_t, K, 16>(x, tokens, top_k, w1, w3, w2, limit, chunk_count, chunks,
                                      sorted, max_chunks, pair_weights, indices, h, out, stream);
}

}  // namespace

cudaError_t moe_route_select(const float* logits, int64_t tokens, int64_t experts,
                             const float* bias, const int32_t* tid2eid, int64_t vocab,
                             const int32_t* ids, moe_score score, int64_t top_k, bool normalize,
                             float route_scale, int32_t* indices, float* weights,
                             cudaStream_t stream) {
  if (tokens < 0 || experts <= 0 || top_k <= 0 || top_k > k_moe_max_top_k || top_k > experts ||
      !logits || !indices || !weights || (tid2eid && (!ids || vocab <= 0)) ||
      int(score) > int(moe_score::sigmoid))
    return cudaErrorInvalidValue;
  const size_t shared = size_t(experts) * (sizeof(float) + 1);
  if (shared > 48 * 1024 || tokens > INT32_MAX) return cudaErrorInvalidValue;  // > 9900 experts
  if (tokens == 0) return cudaSuccess;
  moe_route_select_kernel<<<unsigned(tokens), k_route_threads, shared, stream>>>(
      logits, int(experts), bias, tid2eid, vocab, ids, int(score), int(top_k), normalize,
      route_scale, indices, weights);
  return cudaGetLastError();
}

template <typename act_t>
cudaError_t moe_route(const act_t* x, int64_t tokens, const device_weight& gate, const float* bias,
                      const int32_t* tid2eid, int64_t vocab, const int32_t* ids, moe_score score,
                      int64_t top_k, bool normalize, float route_scale, float* logits,
                      int32_t* indices, float* weights, cudaStream_t stream) {
  if (const cudaError_t e = validate_weight(gate); e != cudaSuccess) return e;
  if (tokens < 0 || !x || !logits) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  // Check the selection's arguments before the linear writes anything.
  if (moe_route_select(logits, 0, gate.rows, bias, tid2eid, vocab, ids, score, top_k, normalize,
                       route_scale, indices, weights, stream) != cudaSuccess ||
      tokens > INT32_MAX)
    return cudaErrorInvalidValue;
  if (const cudaError_t e = linear(x, tokens, gate, logits, stream); e != cudaSuccess) return e;
  return moe_route_select(logits, tokens, gate.rows, bias, tid2eid, vocab, ids, score, top_k,
                          normalize, route_scale, indices, weights, stream);
}

size_t moe_experts_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                   int64_t inter) {
  if (tokens <= 0 || top_k <= 0) return 256;
  return moe_workspace_layout(tokens, top_k, experts, hidden, inter).total;
}

namespace {

// moe_experts (official false) and moe_experts_official (official true).
template <typename act_t>
cudaError_t run_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                        const float* weights, int64_t top_k, const device_weight& w1,
                        const device_weight& w3, const device_weight& w2, float swiglu_limit,
                        void* workspace, size_t workspace_bytes, act_t* y, bool official,
                        cudaStream_t stream) {
  for (const device_weight* w : {&w1, &w3, &w2})
    if (const cudaError_t e = validate_weight(*w); e != cudaSuccess) return e;
  const int64_t experts = w1.count, hidden = w1.cols, inter = w1.rows;
  // One format for w1 and w3 (one kernel expands both); w2 may differ only in dims.
  if (w3.kind != w1.kind || w2.kind != w1.kind || w3.count != experts || w2.count != experts ||
      w3.rows != inter || w3.cols != hidden || w2.rows != hidden || w2.cols != inter ||
      w3.scale_e8m0 != w1.scale_e8m0)
    return cudaErrorInvalidValue;
  if (tokens < 0 || top_k <= 0 || experts > k_plan_max_experts || !x || !indices || !weights ||
      !y || !workspace)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t pairs = tokens * top_k;
  const int nt = moe_chunk_pairs(tokens);
  const int64_t max_chunks = moe_max_chunks(pairs, experts, nt);
  if (pairs > INT32_MAX || max_chunks > 65535) return cudaErrorInvalidValue;
  const moe_layout l = moe_workspace_layout(tokens, top_k, experts, hidden, inter);
  if (workspace_bytes < l.total || !aligned_16(workspace)) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(workspace);
  int* chunk_count = reinterpret_cast<int*>(base + l.count_offset);
  int* sorted = reinterpret_cast<int*>(base + l.sorted_offset);
  int4* chunks = reinterpret_cast<int4*>(base + l.chunks_offset);
  float* h = reinterpret_cast<float*>(base + l.h_offset);
  float* out = reinterpret_cast<float*>(base + l.out_offset);

  moe_plan_kernel<<<1, k_plan_threads, 0, stream>>>(indices, int(pairs), int(experts), nt,
                                                    chunk_count, sorted, chunks);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // Official order: the routing weights scale h (gate-up kernel) instead of the combine.
  const float* pair_weights = official ? weights : nullptr;
  cudaError_t status = cudaErrorInvalidValue;
  switch (w1.kind) {
#define DSV4_MOE_LAUNCH(KIND)                                                                    \
  case weight_kind::KIND:                                                                        \
    status = launch_experts_nt<act_t, weight_kind::KIND>(                                        \
        nt, x, tokens, top_k, w1, w3, w2, swiglu_limit, chunk_count, chunks, sorted, max_chunks, \
        pair_weights, indices, h, out, stream);                                                  \
    break;
    DSV4_MOE_LAUNCH(f32)
    DSV4_MOE_LAUNCH(bf16)
    DSV4_MOE_LAUNCH(fp8_block)
    DSV4_MOE_LAUNCH(mxfp4)
    DSV4_MOE_LAUNCH(nvfp4)
#undef DSV4_MOE_LAUNCH
  }
  if (status != cudaSuccess) return status;
  return launch_moe_combine(official, out, indices, weights, tokens, top_k, experts, hidden, y,
                            stream);
}

}  // namespace

template <typename act_t>
cudaError_t moe_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                        const float* weights, int64_t top_k, const device_weight& w1,
                        const device_weight& w3, const device_weight& w2, float swiglu_limit,
                        void* workspace, size_t workspace_bytes, act_t* y, cudaStream_t stream) {
  return run_experts(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                     workspace_bytes, y, false, stream);
}

template <typename act_t>
cudaError_t moe_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                 const float* weights, int64_t top_k, const device_weight& w1,
                                 const device_weight& w3, const device_weight& w2,
                                 float swiglu_limit, void* workspace, size_t workspace_bytes,
                                 act_t* y, cudaStream_t stream) {
  return run_experts(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                     workspace_bytes, y, true, stream);
}

#define DSV4_MOE_INSTANTIATE(T)                                                                  \
  template cudaError_t moe_route<T>(const T*, int64_t, const device_weight&, const float*,       \
                                    const int32_t*, int64_t, const int32_t*, moe_score, int64_t, \
                                    bool, float, float*, int32_t*, float*, cudaStream_t);        \
  template cudaError_t moe_experts<T>(                                                           \
      const T*, int64_t, const int32_t*, const float*, int64_t, const device_weight&,            \
      const device_weight&, const device_weight&, float, void*, size_t, T*, cudaStream_t);       \
  template cudaError_t moe_experts_official<T>(                                                  \
      const T*, int64_t, const int32_t*, const float*, int64_t, const device_weight&,            \
      const device_weight&, const device_weight&, float, void*, size_t, T*, cudaStream_t);
DSV4_MOE_INSTANTIATE(float)
DSV4_MOE_INSTANTIATE(__nv_bfloat16)
#undef DSV4_MOE_INSTANTIATE

}  // namespace dsv4::cuda
