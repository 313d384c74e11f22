// Lightning indexer, first version (f32 or bf16 activations, f32 scores), two kernels per chunk of
// tokens:
//
//  * indexer_score_kernel: grid (token, run of k_score_entries entries). The token's q (all
//    heads) and head weights sit in shared memory for the whole run; keys are staged
//    k_score_tile at a time. Thread (head lane, entry group) computes q_h . k for 8 entries per
//    head (q rows padded by 4 floats so that a warp's float4 reads of 32 heads hit distinct
//    banks; the key reads are warp-wide broadcasts), accumulates w_h * relu(.) * q_scale over its
//    heads and the block sums the head lanes. Scores go to scratch [tokens, max_entries]; an
//    entry without a valid row scores -inf.
//  * indexer_topk_kernel: one CTA per token. Radix select (4 passes of 8 bits over the scores
//    mapped to order-preserving u32) finds the k-th largest value u*; every entry above u* is
//    taken, and of those equal to u* the lowest entry indices (a block-wide scan in index order).
//    The k selected (u, entry) pairs are bitonic-sorted as u64 keys (~u << 32 | entry), which is
//    exactly "higher score first, ties lower entry first"; -0 is folded into +0 before mapping,
//    as the CPU's == comparison treats them.
#include <algorithm>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/indexer.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/paged_rows.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_score_threads = 256;
constexpr int k_head_lanes = 64;                                // threads along heads
constexpr int k_entry_groups = k_score_threads / k_head_lanes;  // 4
constexpr int k_entries_per_thread = 8;
constexpr int k_score_tile = k_entry_groups * k_entries_per_thread;  // 32 entries per tile
constexpr int k_score_entries = 8 * k_score_tile;                    // 256 entries per CTA
constexpr int k_q_pad = 4;
constexpr int k_topk_threads = 1024;
constexpr int k_radix_bins = 256;

// t0: first token of the chunk; scores [chunk tokens, max_entries]. q, weights and keys are
// staged in shared memory as f32 whatever act_t.
template <typename act_t>
__global__ void __launch_bounds__(k_score_threads)
    indexer_score_kernel(const act_t* q, const act_t* weights, int64_t t0, int64_t heads, int64_t d,
                         const act_t* key_pool, int64_t pool_rows, const int32_t* block_table,
                         int64_t table_rows, int64_t table_width, const int32_t* token_seq,
                         const int32_t* n_visible, int64_t block_size, int64_t max_entries,
                         int64_t runs, float q_scale, float* scores) {
  extern __shared__ float4 smem4[];  // float4: 16-byte aligned for the vector accesses
  float* smem = reinterpret_cast<float*>(smem4);
  __shared__ float partial[k_score_threads / k_warp_size][k_entries_per_thread];
  __shared__ int64_t tile_row[k_score_tile];
  const int64_t local = blockIdx.x / runs;
  const int64_t t = t0 + local;
  const int64_t begin = (blockIdx.x % runs) * k_score_entries;
  const int64_t n = clamp_visible(n_visible[t], max_entries);
  if (begin >= n) return;  // block-uniform
  const int64_t end = begin + k_score_entries < n ? begin + k_score_entries : n;
  const int64_t seq = token_seq[t];
  const int32_t* table = paged_table_row(block_table, table_rows, table_width, seq);

  const int64_t q_stride = d + k_q_pad;
  float* q_s = smem;                         // [heads, d + pad]
  float* w_s = q_s + heads * q_stride;       // [heads]
  float* k_s = w_s + ((heads + 3) / 4) * 4;  // [k_score_tile, d], 16-byte aligned
  const int64_t d4 = d / 4;
  for (int64_t x = threadIdx.x; x < heads * d4; x += blockDim.x) {
    const int64_t h = x / d4, c4 = x % d4;
    reinterpret_cast<float4*>(q_s + h * q_stride)[c4] = load_act4(q + (t * heads + h) * d + 4 * c4);
  }
  for (int64_t h = threadIdx.x; h < heads; h += blockDim.x)
    w_s[h] = act_to_f32(weights[t * heads + h]);

  const int head_lane = threadIdx.x % k_head_lanes;
  const int group = threadIdx.x / k_head_lanes;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  for (int64_t s0 = begin; s0 < end; s0 += k_score_tile) {
    __syncthreads();  // q / w staged, or the previous tile consumed
    if (threadIdx.x < k_score_tile) {
      const int64_t s = s0 + threadIdx.x;
      tile_row[threadIdx.x] =
          (s < end && table) ? paged_pool_row(table, table_width, block_size, pool_rows, s) : -1;
    }
    __syncthreads();
    for (int64_t x = threadIdx.x; x < k_score_tile * d4; x += blockDim.x) {
      const int64_t e = x / d4, c4 = x % d4;
      const int64_t row = tile_row[e];
      reinterpret_cast<float4*>(k_s + e * d)[c4] =
          row >= 0 ? load_act4(key_pool + row * d + 4 * c4) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    __syncthreads();

    float sum[k_entries_per_thread];
#pragma unroll
    for (int j = 0; j < k_entries_per_thread; ++j) sum[j] = 0.0f;
    for (int64_t h = head_lane; h < heads; h += k_head_lanes) {
      float dot[k_entries_per_thread];
#pragma unroll
      for (int j = 0; j < k_entries_per_thread; ++j) dot[j] = 0.0f;
      const float4* qh = reinterpret_cast<const float4*>(q_s + h * q_stride);
      for (int64_t c4 = 0; c4 < d4; ++c4) {
        const float4 a = qh[c4];
#pragma unroll
        for (int j = 0; j < k_entries_per_thread; ++j) {
          const float4 b =
              reinterpret_cast<const float4*>(k_s + (group * k_entries_per_thread + j) * d)[c4];
          dot[j] += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
        }
      }
#pragma unroll
      for (int j = 0; j < k_entries_per_thread; ++j)
        sum[j] += w_s[h] * (fmaxf(dot[j], 0.0f) * q_scale);
    }
    // Sum over the 64 head lanes: the two warps of an entry group.
#pragma unroll
    for (int j = 0; j < k_entries_per_thread; ++j) {
      const float v = warp_sum(sum[j]);
      if (lane == 0) partial[warp][j] = v;
    }
    __syncthreads();
    if (threadIdx.x < k_score_tile) {
      const int e = threadIdx.x;
      const int g = e / k_entries_per_thread, j = e % k_entries_per_thread;
      const int64_t s = s0 + e;
      if (s < end) {
        const int w0 = g * (k_head_lanes / k_warp_size);
        float v = 0.0f;
        for (int w = w0; w < w0 + k_head_lanes / k_warp_size; ++w) v += partial[w][j];
        scores[local * max_entries + s] = tile_row[e] >= 0 ? v : -INFINITY;
      }
    }
  }
}

__global__ void __launch_bounds__(k_topk_threads)
    indexer_topk_kernel(const float* scores, int64_t t0, int64_t max_entries,
                        const int32_t* block_table, int64_t table_rows, int64_t table_width,
                        const int32_t* token_seq, const int32_t* n_visible, int64_t block_size,
                        int64_t pool_rows, int64_t top_k, int32_t* out) {
  __shared__ uint32_t hist[k_radix_bins];
  __shared__ unsigned long long keys[k_indexer_max_top_k];
  __shared__ uint32_t warp_count[k_topk_threads / k_warp_size];
  __shared__ uint32_t s_digit, s_remaining, s_selected;
  const int64_t local = blockIdx.x;
  const int64_t t = t0 + local;
  const float* s = scores + local * max_entries;
  const int64_t n = clamp_visible(n_visible[t], max_entries);
  const int64_t k = top_k < n ? top_k : n;
  int32_t* o = out + t * top_k;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;

  if (k > 0) {
    // Radix select of the k-th largest ordered value, 8 bits at a time from the top.
    uint32_t prefix = 0, mask = 0;
    if (threadIdx.x == 0) s_remaining = uint32_t(k);
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = threadIdx.x; b < k_radix_bins; b += blockDim.x) hist[b] = 0;
      __syncthreads();
      // Scores cluster in few bins (the top byte is sign and exponent), so lanes of a warp that
      // hit the same bin add once through their leader instead of contending on one counter.
      for (int64_t chunk = 0; chunk < n; chunk += blockDim.x) {
        const int64_t i = chunk + threadIdx.x;
        const uint32_t u = i < n ? ordered_float_bits(s[i]) : 0u;
        const bool counted = i < n && (u & mask) == prefix;
        const uint32_t bin = counted ? (u >> shift) & 0xFFu : uint32_t(k_radix_bins);
        const unsigned peers = __match_any_sync(0xffffffffu, bin);
        if (counted && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], uint32_t(__popc(peers)));
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        uint32_t remaining = s_remaining, above = 0;
        int b = k_radix_bins - 1;
        for (; b > 0; --b) {
          if (above + hist[b] >= remaining) break;
          above += hist[b];
        }
        s_digit = uint32_t(b);
        s_remaining = remaining - above;
      }
      __syncthreads();
      prefix |= s_digit << shift;
      mask |= 0xFFu << shift;
    }
    // prefix = u*; take every entry above it and the lowest-indexed `ties` entries equal to it.
    const uint32_t ties = s_remaining;
    if (threadIdx.x == 0) s_selected = 0;
    __syncthreads();
    uint32_t ties_before = 0;  // entries equal to u* in earlier chunks (same in every thread)
    for (int64_t chunk = 0; chunk < n; chunk += blockDim.x) {
      const int64_t i = chunk + threadIdx.x;
      const uint32_t u = i < n ? ordered_float_bits(s[i]) : 0u;
      const bool above = i < n && u > prefix;
      const bool equal = i < n && u == prefix;
      const unsigned ballot = __ballot_sync(0xffffffffu, equal);
      if (lane == 0) warp_count[warp] = __popc(ballot);
      __syncthreads();
      uint32_t rank = ties_before + __popc(ballot & ((1u << lane) - 1u));
      uint32_t chunk_ties = 0;
      for (int w = 0; w < int(blockDim.x / k_warp_size); ++w) {
        if (w < warp) rank += warp_count[w];
        chunk_ties += warp_count[w];
      }
      if (above || (equal && rank < ties)) {
        const uint32_t slot = atomicAdd(&s_selected, 1u);
        if (slot < k_indexer_max_top_k)
          keys[slot] = (static_cast<unsigned long long>(~u) << 32) | static_cast<uint32_t>(i);
      }
      ties_before += chunk_ties;
      __syncthreads();  // warp_count is rewritten by the next chunk
    }
  }
  __syncthreads();

  // Bitonic sort of the k keys, padded with the largest key to a power of two.
  int64_t padded = 1;
  while (padded < k) padded *= 2;
  for (int64_t i = k + threadIdx.x; i < padded; i += blockDim.x) keys[i] = ~0ull;
  __syncthreads();
  for (int64_t size = 2; size <= padded; size *= 2) {
    for (int64_t stride = size / 2; stride > 0; stride /= 2) {
      for (int64_t i = threadIdx.x; i < padded; i += blockDim.x) {
        const int64_t partner = i ^ stride;
        if (partner > i) {
          const bool ascending = (i & size) == 0;
          const unsigned long long a = keys[i], b = keys[partner];
          if ((a > b) == ascending) {
            keys[i] = b;
            keys[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }

  const int64_t seq = token_seq[t];
  const int32_t* table = paged_table_row(block_table, table_rows, table_width, seq);
  for (int64_t i = threadIdx.x; i < top_k; i += blockDim.x) {
    int64_t row = -1;
    if (i < k && table) {
      const int64_t entry = int64_t(keys[i] & 0xFFFFFFFFull);
      row = paged_pool_row(table, table_width, block_size, pool_rows, entry);
    }
    o[i] = int32_t(row);
  }
}

}  // namespace

size_t indexer_scratch_bytes(int64_t tokens, int64_t max_entries) {
  return size_t(tokens) * size_t(max_entries) * sizeof(float);
}

template <typename act_t>
cudaError_t indexer_topk(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                         int64_t head_dim, const act_t* key_pool, int64_t pool_rows,
                         const int32_t* block_table, int64_t table_rows, int64_t table_width,
                         const int32_t* token_seq, const int32_t* n_visible, int64_t block_size,
                         int64_t top_k, float q_scale, float* scratch, size_t scratch_bytes,
                         int32_t* out, cudaStream_t stream) {
  if (tokens < 0 || heads <= 0 || head_dim <= 0 || head_dim % 4 != 0 || pool_rows < 0 ||
      table_rows < 0 || table_width < 0 || block_size <= 0 || top_k < 0 ||
      top_k > k_indexer_max_top_k || !act4_aligned<act_t>(q) || !act4_aligned<act_t>(key_pool))
    return cudaErrorInvalidValue;
  if (tokens == 0 || top_k == 0) return cudaSuccess;
  // Entries are addressed as u32 in the sort keys; 2^31 is far beyond any context.
  const int64_t max_entries = std::max<int64_t>(table_width * block_size, 1);
  if (max_entries > INT32_MAX) return cudaErrorInvalidValue;
  const int64_t chunk = int64_t(scratch_bytes / indexer_scratch_bytes(1, max_entries));
  if (chunk < 1 || !scratch) return cudaErrorInvalidValue;

  const size_t smem = (size_t(heads) * size_t(head_dim + k_q_pad) + size_t((heads + 3) / 4 * 4) +
                       size_t(k_score_tile) * size_t(head_dim)) *
                      sizeof(float);
  cudaError_t status = cudaFuncSetAttribute(indexer_score_kernel<act_t>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (status != cudaSuccess) return status;
  const int64_t runs = ceil_div(max_entries, k_score_entries);
  for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
    const int64_t count = std::min(chunk, tokens - t0);
    if (count * runs > INT32_MAX) return cudaErrorInvalidValue;
    indexer_score_kernel<<<unsigned(count * runs), k_score_threads, smem, stream>>>(
        q, weights, t0, heads, head_dim, key_pool, pool_rows, block_table, table_rows, table_width,
        token_seq, n_visible, block_size, max_entries, runs, q_scale, scratch);
    if ((status = cudaGetLastError()) != cudaSuccess) return status;
    indexer_topk_kernel<<<unsigned(count), k_topk_threads, 0, stream>>>(
        scratch, t0, max_entries, block_table, table_rows, table_width, token_seq, n_visible,
        block_size, pool_rows, top_k, out);
    if ((status = cudaGetLastError()) != cudaSuccess) return status;
  }
  return cudaSuccess;
}

#define DSV4_INDEXER_INSTANTIATE(T)                                                               \
  template cudaError_t indexer_topk<T>(const T*, const T*, int64_t, int64_t, int64_t, const T*,   \
                                       int64_t, const int32_t*, int64_t, int64_t, const int32_t*, \
                                       const int32_t*, int64_t, int64_t, float, float*, size_t,   \
                                       int32_t*, cudaStream_t);
DSV4_INDEXER_INSTANTIATE(float)
DSV4_INDEXER_INSTANTIATE(__nv_bfloat16)
#undef DSV4_INDEXER_INSTANTIATE

}  // namespace dsv4::cuda
