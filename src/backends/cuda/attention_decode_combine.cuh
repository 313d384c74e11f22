// The combine kernels of the split-KV decode (attention_decode.cu): the block combine (one CTA
// per row) and plan.combine_rows (one warp per row).
#pragma once

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/attention_decode_merge.cuh"
#include "backends/cuda/attention_decode_partials.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// One CTA per (token, head); thread i owns channels 4 i .. 4 i + 3. The splits' (max, sum) are
// read by all threads at once (a serial walk over them cost two dependent L2 round trips per
// split: ~35 us at 130 splits); their weights go through shared memory in chunks, so the partial
// rows are then loaded without waiting on anything but shared memory.
constexpr int k_combine_chunk = 1024;

__device__ __forceinline__ float combine_block_reduce(float v, bool is_max, float* red) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
#pragma unroll
  for (int o = k_warp_size / 2; o > 0; o /= 2) {
    const float x = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, x) : v + x;
  }
  __syncthreads();  // red is free (an earlier reduction's readers are done)
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < k_combine_threads / k_warp_size; ++w)
    v = is_max ? fmaxf(v, red[w]) : v + red[w];
  return v;
}

// part_t: float, or __nv_bfloat16 (plan.partials_bf16: widened exactly, then the same arithmetic).
// early (bf16 rows only): the rows of the first k_combine_early splits are loaded before the
// (max, sum) reduction, so that a row's two L2 trips overlap (as the row combine's), and the
// later splits go 8 loads deep instead of 16; its launch bounds ask for 4 CTAs per SM (<= 128
// registers), the residency of the 16-deep version without early loads (122 registers). H200 l33l
// (bench_attention --kv-fp8-ab, 6440953 / early, alternating): Flash CSA T=1 (20
// splits) 13.31-13.54 -> 12.67-12.93 us, Pro CSA T=1 (18) 14.30-14.40 -> 13.73-13.82, HCA 128K T=1
// / T=2 / T=4 1.03x, HCA 1M T=8 and Pro T=4 (16) 1.01x, FP8 records 1.03-1.05x at the same short
// steps.
constexpr int k_combine_early = 16;
template <typename act_t, bool l2 = false, typename part_t = float,
          bool early = false>  // l2: as attention_decode_combine_rows
__global__ void __launch_bounds__(k_combine_threads, early ? 4 : 1)
    attention_decode_combine(const part_t* part_o, const float2* part_ml, const float* sinks,
                             int heads, int splits, act_t* out, unsigned long long* trace,
                             int trigger) {
  static_assert(!early || (l2 && !std::is_same_v<part_t, float>));
  __shared__ float weight_s[k_combine_chunk];
  __shared__ float red[k_combine_threads / k_warp_size];
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_entry);
  // plan.combine_trigger: the step's next kernel may be placed now (it waits for this grid in its
  // own pdl_wait: the engine's small kernels, pdl.cuh); trigger 0: at this grid's exit.
  if (trigger) pdl_trigger();
  // Launched with programmatic stream serialization: wait for the partials of the main kernel
  // (pdl_wait returns once that grid has completed and its writes are visible).
  pdl_wait();
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_setup);
  const int64_t t = blockIdx.x / heads;
  const int h = int(blockIdx.x % heads);
  const float2* ml = part_ml + t * splits * heads + h;  // split i at ml[i * heads]
  const part_t* po = part_o + (t * splits * heads + h) * k_d + threadIdx.x * 4;
  const float sink = sinks[h] * k_log2e;
  uint64_t policy = 0;
  if constexpr (l2) policy = l2_policy_evict_first();
  // early: split u's 4 values of this thread (a split without keys wrote no row: loaded, unused).
  uint2 pre[early ? k_combine_early : 1];
  if constexpr (early) {
#pragma unroll
    for (int u = 0; u < k_combine_early; ++u)
      if (u < splits) pre[u] = load_raw4_policy(po + int64_t(u) * heads * k_d, policy);
  }
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < splits; i += k_combine_threads)
    mx = fmaxf(mx, ml[int64_t(i) * heads].x);
  mx = fmaxf(combine_block_reduce(mx, true, red), sink);
  float den = 0.0f;  // this thread's splits
  float4 o = make_float4(0, 0, 0, 0);
  for (int c0 = 0; c0 < splits; c0 += k_combine_chunk) {
    const int n = min(k_combine_chunk, splits - c0);
    __syncthreads();  // the previous chunk's weights are consumed
    for (int i = threadIdx.x; i < n; i += k_combine_threads) {
      const float2 v = ml[int64_t(c0 + i) * heads];
      // A split without keys (m = -inf) wrote no partial row: weight 0 and skipped below.
      const float w = v.x == -INFINITY ? 0.0f : exp2f(v.x - mx);
      weight_s[i] = w;
      den += w == 0.0f ? 0.0f : v.y * w;
    }
    __syncthreads();
    int i0 = 0;
    if constexpr (early) {
      if (c0 == 0) {  // the early rows: the same fma chain, in split order
#pragma unroll
        for (int u = 0; u < k_combine_early; ++u) {
          if (u >= n) break;
          const float w = weight_s[u];
          const float4 v = w != 0.0f ? widen_bf16x4(pre[u].x, pre[u].y) : make_float4(0, 0, 0, 0);
          o.x = __fmaf_rn(w, v.x, o.x);
          o.y = __fmaf_rn(w, v.y, o.y);
          o.z = __fmaf_rn(w, v.z, o.z);
          o.w = __fmaf_rn(w, v.w, o.w);
        }
        i0 = min(n, k_combine_early);
      }
    }
    // 16 independent loads (16 bytes f32, 8 bytes bf16) in flight per thread (8 left the HBM
    // mostly idle at T = 1 with ~130 splits: 128 threads x 8 x 16 B per CTA, one CTA per head;
    // early: 8 beyond its first 16 splits). The sum runs in split order either way.
#pragma unroll(early ? 8 : 16)
    for (int i = i0; i < n; ++i) {
      const float w = weight_s[i];
      float4 v = make_float4(0, 0, 0, 0);  // predicated load: unrolled loads stay independent
      if constexpr (l2) {
        if (w != 0.0f) v = load4_policy(po + int64_t(c0 + i) * heads * k_d, policy);
      } else {
        if (w != 0.0f) v = load4_plain(po + int64_t(c0 + i) * heads * k_d);
      }
      // Explicit FMAs (what the compiler contracted to before): the row combine repeats this
      // chain bit for bit.
      o.x = __fmaf_rn(w, v.x, o.x);
      o.y = __fmaf_rn(w, v.y, o.y);
      o.z = __fmaf_rn(w, v.z, o.z);
      o.w = __fmaf_rn(w, v.w, o.w);
    }
  }
  den = combine_block_reduce(den, false, red) + exp2f(sink - mx);
  const float inv = 1.0f / den;
  if constexpr (std::is_same_v<part_t, float>) {
    store4(out + (t * heads + h) * k_d + threadIdx.x * 4,
           make_float4(o.x * inv, o.y * inv, o.z * inv, o.w * inv));
  } else {  // channels c, c + 1, c + 8, c + 9 (store_split_partial_bf16)
    act_t* const dst = out + (t * heads + h) * k_d + part_channel(threadIdx.x * 4);
    store2(dst, o.x * inv, o.y * inv);
    store2(dst + 8, o.z * inv, o.w * inv);
  }
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_end);
}

// plan.combine_rows: one warp per (token, head) row, lane l owning the float4 columns l + 32 j
// (j < 4), the splits' (m, l) read by every lane and merged by merge_row_weights (the combine's
// arithmetic: the output equals attention_decode_combine's bit for bit). No shared memory or
// barrier; up to 4 splits' partial loads (16 per lane) in flight at once. The block combine
// above takes 122 registers for its 16-deep load window, so 4 CTAs (512 rows) fit an SM and
// T = 32 (2048 rows) ran in four waves of its latency chain.
constexpr int k_combine_rows_warps = 4;
constexpr int k_combine_rows_chunk = 4;  // splits whose partial loads are in flight together

template <int max_splits>
constexpr int combine_rows_min_blocks() {
  // Register budget per thread 65536 / (128 * blocks): 2 splits 56 (T = 32 with 128 heads: 4096
  // rows in one wave), 4 splits 92 (T = 32, 64 heads: 2048 rows); more than 4 splits come with
  // few rows (T <= 16), and 4 blocks (128 registers) put the 16-split weights on the stack; 16
  // splits (bf16 rows: 128 registers of early loads) 2 as well.
  return max_splits <= 2 ? 8 : max_splits <= 4 ? 5 : 2;
}

// l2 (plan.partials_l2): the partials are read with the L2 evict_first priority (the main kernel
// stored them with evict_last; they are not kept past their one read).
template <int max_splits, typename act_t, bool l2 = false, typename part_t = float>
__global__ void __launch_bounds__(k_combine_rows_warps* k_warp_size,
                                  combine_rows_min_blocks<max_splits>())
    attention_decode_combine_rows(const part_t* part_o, const float2* part_ml, const float* sinks,
                                  int64_t rows, int heads, int splits, act_t* out,
                                  unsigned long long* trace, int trigger) {
  constexpr bool p16 = !std::is_same_v<part_t, float>;
  // bf16 rows: every split's row in the first chunk, loaded beside the (m, l) (one dependent L2
  // trip for the row; the 8-split instance took two trips in chunks of 4 until session 33).
  constexpr int chunk =
      p16 || max_splits < k_combine_rows_chunk ? max_splits : k_combine_rows_chunk;
  constexpr int cols = k_d / 4 / k_warp_size;  // float4 columns per lane
  static_assert(max_splits % chunk == 0 && cols == 4);
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_entry);
  if (trigger) pdl_trigger();  // (as attention_decode_combine)
  pdl_wait();                  // the main grid's partials (PDL, as attention_decode_combine)
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_setup);
  const int lane = threadIdx.x % k_warp_size;
  const int64_t row = int64_t(blockIdx.x) * k_combine_rows_warps + threadIdx.x / k_warp_size;
  if (row >= rows) return;  // warp-uniform; no barrier follows
  const int64_t t = row / heads;
  const int h = int(row % heads);
  // bf16 partials: the first chunk's rows are loaded beside the (m, l), before their weights are
  // known (a split without keys wrote no row: its bytes are loaded but not used), so the row's
  // two L2 round trips overlap instead of following each other.
  uint2 pre[p16 ? chunk : 1][cols];
  if constexpr (p16) {
    const part_t* const src = part_o + (t * splits * heads + h) * k_d + 4 * lane;
    const uint64_t first = l2_policy_evict_first();
#pragma unroll
    for (int u = 0; u < chunk; ++u)
      if (u < splits)
#pragma unroll
        for (int j = 0; j < cols; ++j)
          pre[u][j] = load_raw4_policy(src + u * int64_t(heads) * k_d + 128 * j, first);
  }
  float2 v[max_splits];
#pragma unroll
  for (int r = 0; r < max_splits; ++r)
    v[r] = r < splits ? part_ml[(t * splits + r) * heads + h] : make_float2(-INFINITY, 0.0f);
  float w[max_splits + 1];
  merge_row_weights<max_splits>(v, splits, sinks[h] * k_log2e, w);
  const part_t* const po = part_o + (t * splits * heads + h) * k_d + 4 * lane;
  const int64_t split_stride = int64_t(heads) * k_d;
  float4 o[cols];
#pragma unroll
  for (int j = 0; j < cols; ++j) o[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  uint64_t policy = 0;
  if constexpr (l2) policy = l2_policy_evict_first();
#pragma unroll
  for (int r0 = 0; r0 < max_splits; r0 += chunk) {
    if (r0 >= splits) break;  // warp-uniform
    float4 x[chunk][cols];
#pragma unroll
    for (int u = 0; u < chunk; ++u) {
      const int r = r0 + u;
      // A split without keys (weight 0) wrote no partial row: skipped, as the combine does.
      if (r < splits && w[r] != 0.0f)
#pragma unroll
        for (int j = 0; j < cols; ++j) {
          const part_t* const src = po + r * split_stride + 128 * j;
          if constexpr (p16) {
            if (r0 == 0)
              x[u][j] = widen_bf16x4(pre[u][j].x, pre[u][j].y);
            else
              x[u][j] = load4_policy(src, policy);
          } else if constexpr (l2) {
            x[u][j] = load4_policy(src, policy);
          } else {
            x[u][j] = load4_cg(src);
          }
        }
    }
    // The fma chain in split order, as the combine's (a zero weight adds exactly nothing).
#pragma unroll
    for (int u = 0; u < chunk; ++u) {
      const int r = r0 + u;
      if (r < splits && w[r] != 0.0f)
#pragma unroll
        for (int j = 0; j < cols; ++j) {
          o[j].x = __fmaf_rn(w[r], x[u][j].x, o[j].x);
          o[j].y = __fmaf_rn(w[r], x[u][j].y, o[j].y);
          o[j].z = __fmaf_rn(w[r], x[u][j].z, o[j].z);
          o[j].w = __fmaf_rn(w[r], x[u][j].w, o[j].w);
        }
    }
  }
  const float inv = w[max_splits];
  if constexpr (std::is_same_v<part_t, float>) {
    act_t* const dst = out + row * k_d + 4 * lane;
#pragma unroll
    for (int j = 0; j < cols; ++j)
      store4(dst + 128 * j, make_float4(__fmul_rn(o[j].x, inv), __fmul_rn(o[j].y, inv),
                                        __fmul_rn(o[j].z, inv), __fmul_rn(o[j].w, inv)));
  } else {  // channels c, c + 1, c + 8, c + 9 (store_split_partial_bf16)
#pragma unroll
    for (int j = 0; j < cols; ++j) {
      act_t* const dst = out + row * k_d + part_channel(4 * lane + 128 * j);
      store2(dst, __fmul_rn(o[j].x, inv), __fmul_rn(o[j].y, inv));
      store2(dst + 8, __fmul_rn(o[j].z, inv), __fmul_rn(o[j].w, inv));
    }
  }
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_end);
}

}  // namespace

}  // namespace dsv4::cuda
