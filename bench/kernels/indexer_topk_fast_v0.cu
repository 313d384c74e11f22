// Benchmark-only copy of indexer_topk_fast.cu as of commit 6132761 (session 3: 12-bit histogram,
// collect kernel, one 1024-thread select CTA per token with bitonic sorts), in namespace
// dsv4::cuda::v0 so bench_attention can time the previous path beside the current one in the same
// run. Not part of the backend; remove once the comparison is recorded in bench/RESULTS.md.
// Indexer top-k in three launches (plus a memset of the histograms and candidate counts):
//
// 1. indexer_score_kernel, grid (key chunk, token), 4 warps: the token's 64 x 128 query in shared
//    memory (bf16), keys streamed 128 rows per pass through a 2-stage cp.async ring (16-byte chunk
//    c of row r stored at c ^ (r & 7)). Warp w computes S^T = K Q^T for keys 32 w .. +32 (M =
//    keys, N = heads, K = dims) on mma.sync; lane quads then reduce sum_h w_h relu(s) across the
//    heads they hold. Scores go to scratch and into a 4096-bin histogram of their top 12 bits
//    (shared, then added to the token's global histogram).
// 2. indexer_collect_kernel, same grid: each CTA finds the bin of the token's k-th key from the
//    histogram and lists its chunk's keys at or above that bin (the token's candidates).
// 3. indexer_select_kernel, one 1024-thread CTA per token: exact radix select on the 64-bit key
//    (ordered score bits << 32 | ~entry), unique per entry, so "higher score first, equal scores
//    lower entry first" is plain descending key order. Keys above the bin are selected (fewer
//    than k); the bin's keys are bitonic-sorted and the best appended; the selection is
//    bitonic-sorted and written as pool rows. When the bin holds more keys than the candidate
//    buffer (heavy ties), nothing was listed: 8 more bits at a time are resolved with histogram
//    passes over all the scores, then one pass collects.
#include <algorithm>
#include <cmath>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/paged_rows.cuh"

namespace dsv4::cuda::v0 {

namespace {

constexpr int k_heads = int(k_indexer_fast_heads);
constexpr int k_dim = int(k_indexer_fast_head_dim);
constexpr int k_row_bytes = k_dim * 2;
constexpr int k_chunks = k_row_bytes / 16;
constexpr int k_pass = 128;  // keys per pass: 4 warps x 32
constexpr int k_score_threads = 128;
constexpr int k_stages = 2;
constexpr int k_bins = 4096;  // top 12 bits of the ordered score
constexpr int k_q_bytes = k_heads * k_row_bytes;
constexpr int k_pass_bytes = k_pass * k_row_bytes;
constexpr int k_max_range_blocks = 1025;  // block ids of a CTA's range (keys_per_cta <= 1024 bs)
// Pool rows of the keys of passes j .. j + 3 (slot j % 4): computed two passes ahead, one key per
// thread, so the copy loop only reads them (no block division per copied chunk).
constexpr int k_row_ring = 4;
constexpr int k_score_smem = k_q_bytes + k_stages * k_pass_bytes + k_bins * 4 +
                             k_row_ring * k_pass * 4 + k_max_range_blocks * 4;

constexpr int k_select_threads = 1024;
constexpr int k_max_candidates = 8192;
// Per token, the collect kernel lists the keys at or above the threshold bin: fewer than top_k
// above it plus at most k_max_candidates in it.
constexpr int64_t k_candidate_capacity = k_indexer_fast_max_top_k + k_max_candidates;
constexpr int k_collect_threads = 256;
constexpr int k_select_smem =
    k_bins * 4 + k_select_threads * 4 + int(k_indexer_fast_max_top_k) * 8 + k_max_candidates * 8;

static_assert(k_pass * k_chunks % k_score_threads == 0, "pass load must divide evenly");

__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return uint32_t(row * k_row_bytes + ((chunk ^ (row & 7)) << 4));
}

__device__ __forceinline__ uint4 load8_bf16(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                    pack_bf16x2(b.z, b.w));
}

struct paged_entries {
  const int32_t* block_table;
  int64_t table_rows, table_width, block_size, pool_rows;
  int64_t seq;

  // Pool row of entry s, or -1 (no block, row outside the pool).
  __device__ __forceinline__ int64_t row(int64_t s) const {
    return paged_pool_row(paged_table_row(block_table, table_rows, table_width, seq), table_width,
                          block_size, pool_rows, s);
  }
};

template <typename act_t>
__global__ void __launch_bounds__(k_score_threads)
    indexer_score_kernel(const act_t* q, const act_t* weights, const __nv_bfloat16* keys,
                         paged_entries pages, const int32_t* token_seq, const int32_t* n_visible,
                         int64_t capacity, int64_t keys_per_cta, float q_scale, float* scores,
                         uint32_t* hist) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_q_bytes;
  uint32_t* hist_s = reinterpret_cast<uint32_t*>(smem + k_q_bytes + k_stages * k_pass_bytes);
  int32_t* pass_rows = reinterpret_cast<int32_t*>(hist_s + k_bins);  // [k_row_ring][k_pass]
  int32_t* range_blocks = pass_rows + k_row_ring * k_pass;  // block ids of [lo, hi), -1 if none

  const int64_t t = blockIdx.y;
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int64_t lo = int64_t(blockIdx.x) * keys_per_cta;
  if (lo >= n) return;
  const int64_t hi = min(lo + keys_per_cta, n);
  const int64_t passes = (hi - lo + k_pass - 1) / k_pass;
  pages.seq = token_seq[t];
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  // The range's block ids up front (one round of dependent loads per CTA, none in the key loop).
  const int64_t block0 = lo / pages.block_size;
  const int n_blocks = int((hi - 1) / pages.block_size - block0 + 1);
  for (int i = threadIdx.x; i < n_blocks; i += k_score_threads) {
    const int64_t b = block0 + i;
    int32_t id = -1;
    if (pages.seq >= 0 && pages.seq < pages.table_rows && b < pages.table_width)
      id = pages.block_table[pages.seq * pages.table_width + b];
    range_blocks[i] = id;
  }
  __syncthreads();
  // Entry numbers and block sizes are 32-bit here (the host checks the capacity).
  const uint32_t bs = uint32_t(pages.block_size);
  auto compute_rows = [&](int64_t j) {  // thread x: the pool row of key x of pass j, or -1
    const int64_t s = lo + j * k_pass + threadIdx.x;
    int32_t row = -1;
    if (s < hi) {
      const uint32_t block = uint32_t(s) / bs;
      const int32_t id = range_blocks[block - uint32_t(block0)];
      const int64_t r = int64_t(id) * bs + (uint32_t(s) - block * bs);
      if (id >= 0 && r < pages.pool_rows) row = int32_t(r);
    }
    pass_rows[(j % k_row_ring) * k_pass + threadIdx.x] = row;
  };

  auto load_pass = [&](int64_t p, int stage) {
    const int chunk = threadIdx.x % k_chunks;
    const uint32_t dst = k_s + stage * k_pass_bytes;
    const int32_t* rows = pass_rows + (p % k_row_ring) * k_pass;
#pragma unroll
    for (int i = 0; i < k_pass * k_chunks / k_score_threads; ++i) {
      const int r = threadIdx.x / k_chunks + (k_score_threads / k_chunks) * i;
      const int32_t row = rows[r];
      cp_async_16(dst + swizzled(r, chunk),
                  row >= 0 ? keys + int64_t(row) * k_dim + chunk * 8 : keys, row >= 0);
    }
  };

  compute_rows(0);
  if (passes > 1) compute_rows(1);
  if constexpr (sizeof(act_t) == 2) {
#pragma unroll
    for (int i = 0; i < k_heads * k_chunks / k_score_threads; ++i) {
      const int x = int(threadIdx.x) + i * k_score_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      cp_async_16(q_s + swizzled(r, c), q + (t * k_heads + r) * k_dim + c * 8, true);
    }
  } else {
#pragma unroll
    for (int i = 0; i < k_heads * k_chunks / k_score_threads; ++i) {
      const int x = int(threadIdx.x) + i * k_score_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const uint4 v = load8_bf16(q + (t * k_heads + r) * k_dim + c * 8);
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(q_s + swizzled(r, c)),
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
    }
  }
  __syncthreads();  // rows of passes 0 and 1
  load_pass(0, 0);
  cp_async_commit();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads) hist_s[b] = 0;
  float w[8][2];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      w[nt][e] = act_to_f32(weights[t * k_heads + nt * 8 + 2 * (lane % 4) + e]);

  for (int64_t p = 0; p < passes; ++p) {
    cp_async_wait<0>();
    __syncthreads();  // pass p landed; pass p - 1 consumed
    if (p + 1 < passes) load_pass(p + 1, int((p + 1) % k_stages));
    cp_async_commit();
    // Slot (p + 2) % 4 was last read by load_pass(p - 2) and pass p - 2's epilogue, both before
    // the barrier above.
    if (p + 2 < passes) compute_rows(p + 2);
    const int stage = int(p % k_stages);
    const uint32_t kb = k_s + stage * k_pass_bytes;

    float acc[2][8][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
        acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < k_dim / 16; ++kk) {
      uint32_t a[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        ldmatrix_x4(a[mt], kb + swizzled(warp * 32 + mt * 16 + (lane % 8) + ((lane / 8) & 1) * 8,
                                         kk * 2 + lane / 16));
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t b[4];
        ldmatrix_x4(
            b, q_s + swizzled(np * 16 + (lane / 16) * 8 + lane % 8, kk * 2 + ((lane / 8) & 1)));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma_bf16_16816(acc[mt][2 * np], a[mt], b[0], b[1]);
          mma_bf16_16816(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float sc = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) sc += w[nt][e] * fmaxf(acc[mt][nt][2 * half + e], 0.0f);
        sc += __shfl_xor_sync(0xffffffffu, sc, 1);
        sc += __shfl_xor_sync(0xffffffffu, sc, 2);
        const int r = warp * 32 + mt * 16 + half * 8 + lane / 4;
        const int64_t s = lo + p * k_pass + r;
        if (lane % 4 == 0 && s < hi) {
          // + 0.0f: a sum of -0 terms is +0 on the CPU (its accumulator starts at +0).
          const float v =
              pass_rows[(p % k_row_ring) * k_pass + r] >= 0 ? sc * q_scale + 0.0f : -INFINITY;
          scores[t * capacity + s] = v;
          atomicAdd(&hist_s[ordered_float_bits(v) >> 20], 1u);
        }
      }
  }
  cp_async_wait<0>();
  __syncthreads();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads)
    if (hist_s[b]) atomicAdd(&hist[t * k_bins + b], hist_s[b]);
}

// Exclusive prefix sum over the block (thread order); `scratch` holds >= 32 values.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* scratch) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  uint32_t x = v;
#pragma unroll
  for (int o = 1; o < k_warp_size; o *= 2) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == k_warp_size - 1) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / k_warp_size;
    uint32_t s = lane < warps ? scratch[lane] : 0;
#pragma unroll
    for (int o = 1; o < k_warp_size; o *= 2) {
      const uint32_t y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    if (lane < warps) scratch[lane] = s - (lane < warps ? scratch[lane] : 0);  // exclusive
  }
  __syncthreads();
  const uint32_t r = scratch[warp] + x - v;
  __syncthreads();
  return r;
}

// Over counts[0, bins) ordered from the top bin down: the bin b where the count of keys in bins
// above b is < k and that plus counts[b] is >= k (k <= total). Returns (b, above) to all threads.
__device__ __noinline__ uint2 find_threshold(const uint32_t* counts, int bins, uint32_t k,
                                             uint32_t* scratch, uint32_t* result) {
  const int per = (bins + int(blockDim.x) - 1) / int(blockDim.x);
  const int top = bins - 1 - int(threadIdx.x) * per;  // this thread's bins: top, top - 1, ...
  uint32_t sum = 0;
  for (int i = 0; i < per; ++i)
    if (top - i >= 0) sum += counts[top - i];
  const uint32_t before = block_exclusive_scan(sum, scratch);
  if (before < k && before + sum >= k) {
    uint32_t cum = before;
    for (int i = 0; i < per; ++i) {
      const uint32_t c = counts[top - i];
      if (cum + c >= k) {
        result[0] = uint32_t(top - i);
        result[1] = cum;
        break;
      }
      cum += c;
    }
  }
  __syncthreads();
  const uint2 r = make_uint2(result[0], result[1]);
  __syncthreads();
  return r;
}

// Descending bitonic sort of keys[0, n) (n a power of two).
__device__ __noinline__ void bitonic_sort_desc(unsigned long long* keys, int n) {
  for (int k = 2; k <= n; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int ixj = i ^ j;
        if (ixj > i) {
          const unsigned long long a = keys[i], b = keys[ixj];
          if (((i & k) == 0) ? (a < b) : (a > b)) {
            keys[i] = b;
            keys[ixj] = a;
          }
        }
      }
      __syncthreads();
    }
}

__device__ __forceinline__ int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

__device__ __forceinline__ unsigned long long entry_key(float score, int64_t s) {
  return (static_cast<unsigned long long>(ordered_float_bits(score)) << 32) |
         (0xFFFFFFFFull - static_cast<unsigned long long>(s));
}

// Grid (key chunk, token) like the score kernel: every CTA finds the token's threshold bin from
// the histogram and appends the keys of its chunk at or above it to the token's candidate list
// (warp-aggregated atomics). Nothing is listed when the bin is too full: the select kernel then
// resolves more bits over all the scores itself.
__global__ void __launch_bounds__(k_collect_threads)
    indexer_collect_kernel(const float* scores, const uint32_t* hist, const int32_t* n_visible,
                           int64_t capacity, int64_t keys_per_cta, int top_k, uint32_t* cand_count,
                           unsigned long long* cand_list) {
  __shared__ uint32_t counts[k_bins];
  __shared__ uint32_t scratch[32], result[2];
  const int64_t t = blockIdx.y;
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int64_t lo = int64_t(blockIdx.x) * keys_per_cta;
  if (n <= top_k || lo >= n) return;  // the select kernel takes every entry then
  const int64_t hi = min(lo + keys_per_cta, n);
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads) counts[b] = hist[t * k_bins + b];
  __syncthreads();
  const uint2 th = find_threshold(counts, k_bins, uint32_t(top_k), scratch, result);
  if (counts[th.x] > k_max_candidates) return;
  const float* sc = scores + t * capacity;
  const int lane = threadIdx.x % k_warp_size;
  for (int64_t base = lo; base < hi; base += k_collect_threads) {
    const int64_t s = base + threadIdx.x;
    unsigned long long key = 0;
    bool take = false;
    if (s < hi) {
      key = entry_key(sc[s], s);
      take = (key >> 52) >= th.x;
    }
    const unsigned mask = __ballot_sync(0xffffffffu, take);
    if (!mask) continue;
    const int leader = __ffs(mask) - 1;
    uint32_t slot = 0;
    if (lane == leader) slot = atomicAdd(&cand_count[t], uint32_t(__popc(mask)));
    slot = __shfl_sync(0xffffffffu, slot, leader);
    if (take) cand_list[t * k_candidate_capacity + slot + __popc(mask & ((1u << lane) - 1u))] = key;
  }
}

__global__ void __launch_bounds__(k_select_threads)
    indexer_select_kernel(const float* scores, const uint32_t* hist, paged_entries pages,
                          const int32_t* token_seq, const int32_t* n_visible, int64_t capacity,
                          int top_k, const uint32_t* cand_count,
                          const unsigned long long* cand_list, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);  // k_bins
  uint32_t* scratch = counts + k_bins;                   // k_select_threads
  unsigned long long* sel = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* cand = sel + k_indexer_fast_max_top_k;
  __shared__ uint32_t n_sel, n_cand, result[2];

  const int64_t t = blockIdx.x;
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int keep = int(top_k < n ? int64_t(top_k) : n);
  pages.seq = token_seq[t];
  const float* sc = scores + t * capacity;
  if (threadIdx.x == 0) n_sel = n_cand = 0;
  __syncthreads();
  bool sorted = false;  // block-uniform: sel[0, keep) already in final order

  if (keep > 0 && n <= top_k) {  // every visible entry is selected
    for (int64_t s = threadIdx.x; s < n; s += k_select_threads) sel[s] = entry_key(sc[s], s);
    if (threadIdx.x == 0) n_sel = uint32_t(n);
  } else if (keep > 0) {
    for (int b = threadIdx.x; b < k_bins; b += k_select_threads) counts[b] = hist[t * k_bins + b];
    __syncthreads();
    uint2 th = find_threshold(counts, k_bins, uint32_t(keep), scratch, result);
    unsigned long long prefix = th.x;
    int bits = 12;  // resolved leading bits of the key
    uint32_t above = th.y;
    uint32_t in_bin = counts[th.x];
    __syncthreads();
    if (in_bin <= k_max_candidates) {  // the collect kernel listed the keys at or above the bin
      const uint32_t listed = cand_count[t];
      const unsigned long long* list = cand_list + t * k_candidate_capacity;
      for (uint32_t i = threadIdx.x; i < listed; i += k_select_threads) {
        const unsigned long long key = list[i];
        if ((key >> 52) > prefix)
          sel[atomicAdd(&n_sel, 1u)] = key;
        else
          cand[atomicAdd(&n_cand, 1u)] = key;
      }
    } else {
      while (in_bin > k_max_candidates) {  // resolve up to 8 more bits with a pass over the scores
        const int width = min(8, 64 - bits);
        const int shift = 64 - bits - width;
        for (int b = threadIdx.x; b < 256; b += k_select_threads) counts[b] = 0;
        __syncthreads();
        for (int64_t s = threadIdx.x; s < n; s += k_select_threads) {
          const unsigned long long key = entry_key(sc[s], s);
          if ((key >> (64 - bits)) == prefix)
            atomicAdd(&counts[int(key >> shift) & ((1 << width) - 1)], 1u);
        }
        __syncthreads();
        th = find_threshold(counts, 1 << width, uint32_t(keep) - above, scratch, result);
        prefix = (prefix << width) | th.x;
        bits += width;
        above += th.y;
        in_bin = counts[th.x];
        __syncthreads();
      }
      // Keys above the bin are selected (fewer than keep); the bin's keys are candidates.
      const int shift = 64 - bits;
      constexpr int k_unroll = 8;
      for (int64_t base = 0; base < n; base += int64_t(k_select_threads) * k_unroll) {
        float v[k_unroll];
#pragma unroll
        for (int u = 0; u < k_unroll; ++u) {
          const int64_t s = base + threadIdx.x + int64_t(u) * k_select_threads;
          v[u] = s < n ? sc[s] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < k_unroll; ++u) {
          const int64_t s = base + threadIdx.x + int64_t(u) * k_select_threads;
          if (s >= n) continue;
          const unsigned long long key = entry_key(v[u], s);
          const unsigned long long pre = shift == 64 ? 0 : key >> shift;
          if (pre > prefix)
            sel[atomicAdd(&n_sel, 1u)] = key;
          else if (pre == prefix)
            cand[atomicAdd(&n_cand, 1u)] = key;
        }
      }
    }
    __syncthreads();
    const int nc = int(n_cand), ns = int(n_sel);
    if (ns + nc <= k_max_candidates) {
      // One sort of the union (keys above the bin and the bin's keys, all distinct): its first
      // `keep` are the selection in order, so the final sort is skipped.
      for (int i = threadIdx.x; i < ns; i += k_select_threads) cand[nc + i] = sel[i];
      const int padded = pow2_at_least(ns + nc);
      for (int i = ns + nc + int(threadIdx.x); i < padded; i += k_select_threads) cand[i] = 0;
      __syncthreads();
      bitonic_sort_desc(cand, padded);
      for (int i = threadIdx.x; i < keep; i += k_select_threads) sel[i] = cand[i];
      sorted = true;
    } else {
      const int padded = pow2_at_least(nc);
      for (int i = nc + int(threadIdx.x); i < padded; i += k_select_threads) cand[i] = 0;
      __syncthreads();
      bitonic_sort_desc(cand, padded);
      for (int i = threadIdx.x; i < keep - ns; i += k_select_threads) sel[ns + i] = cand[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) n_sel = uint32_t(keep);
  }
  __syncthreads();
  if (!sorted) {
    const int padded = pow2_at_least(max(keep, 1));
    for (int i = keep + int(threadIdx.x); i < padded; i += k_select_threads) sel[i] = 0;
    __syncthreads();
    bitonic_sort_desc(sel, padded);
  }
  for (int i = threadIdx.x; i < top_k; i += k_select_threads) {
    int32_t row = -1;
    if (i < keep) {
      const int64_t s = int64_t(0xFFFFFFFFull - (sel[i] & 0xFFFFFFFFull));
      row = int32_t(pages.row(s));
    }
    out[t * top_k + i] = row;
  }
}

}  // namespace

indexer_fast_plan indexer_topk_fast_make_plan(int64_t tokens, int64_t table_width,
                                              int64_t block_size, int sm_count) {
  indexer_fast_plan p;
  p.tokens = tokens;
  p.capacity = table_width * block_size;
  if (tokens <= 0 || p.capacity <= 0) return p;
  const int64_t want = std::max<int64_t>(1, ceil_div(2 * std::max(sm_count, 1), tokens));
  p.keys_per_cta = std::max<int64_t>(k_pass, ceil_div(ceil_div(p.capacity, want), k_pass) * k_pass);
  // When the grid spans several waves anyway, short CTAs (512 keys) score faster: one CTA's
  // prologue overlaps the others' loads (H200, T=32 x 256K entries: 813 us at 512 keys per CTA,
  // 1105 us at 29184).
  if (tokens * ceil_div(p.capacity, std::min<int64_t>(p.keys_per_cta, 1024)) >
      2 * int64_t(std::max(sm_count, 1)))
    p.keys_per_cta = std::min<int64_t>(p.keys_per_cta, 512);
  // The CTA's block ids must fit its shared list (k_max_range_blocks).
  p.keys_per_cta =
      std::min(p.keys_per_cta, std::max<int64_t>(k_pass, (1024 * block_size) / k_pass * k_pass));
  p.ctas_per_token = ceil_div(p.capacity, p.keys_per_cta);
  const size_t score_bytes = size_t(ceil_div(tokens * p.capacity, 4) * 4) * 4;
  p.scratch_bytes = score_bytes + size_t(tokens) * (k_bins + 4) * 4 +
                    size_t(tokens) * size_t(k_candidate_capacity) * 8;
  return p;
}

template <typename act_t>
cudaError_t indexer_topk_fast(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                              int64_t head_dim, const __nv_bfloat16* key_pool, int64_t pool_rows,
                              const int32_t* block_table, int64_t table_rows, int64_t table_width,
                              const int32_t* token_seq, const int32_t* n_visible,
                              int64_t block_size, int64_t top_k, float q_scale,
                              const indexer_fast_plan& plan, void* scratch, size_t scratch_bytes,
                              int32_t* out, cudaStream_t stream) {
  if (tokens < 0 || heads != k_heads || head_dim != k_dim || top_k <= 0 ||
      top_k > k_indexer_fast_max_top_k || block_size <= 0 || table_width < 0 || table_rows < 0 ||
      pool_rows < 0 || !q || !weights || !key_pool || !block_table || !token_seq || !n_visible ||
      !out || !aligned_16(q) || !aligned_16(key_pool) || !aligned_16(scratch))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (plan.tokens != tokens || plan.capacity != table_width * block_size ||
      scratch_bytes < plan.scratch_bytes || plan.ctas_per_token > INT32_MAX || tokens > 65535)
    return cudaErrorInvalidValue;
  // The score kernel keeps entry numbers and pool rows in 32 bits.
  if (plan.capacity > INT32_MAX || pool_rows > INT32_MAX || block_size > INT32_MAX)
    return cudaErrorInvalidValue;
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(indexer_score_kernel<act_t>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, k_score_smem);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(indexer_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               k_select_smem);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  float* scores = static_cast<float*>(scratch);
  uint32_t* hist = reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(scratch) +
                                               size_t(ceil_div(tokens * plan.capacity, 4) * 4) * 4);
  uint32_t* cand_count = hist + tokens * k_bins;  // [tokens] (+ padding to 16 bytes)
  unsigned long long* cand_list =
      reinterpret_cast<unsigned long long*>(cand_count + ceil_div(tokens, 4) * 4);
  cudaError_t e = cudaMemsetAsync(hist, 0, size_t(tokens) * (k_bins + 4) * 4, stream);
  if (e != cudaSuccess) return e;
  const paged_entries pages{block_table, table_rows, table_width, block_size, pool_rows, 0};
  if (plan.capacity > 0) {
    indexer_score_kernel<act_t>
        <<<dim3(unsigned(plan.ctas_per_token), unsigned(tokens)), k_score_threads, k_score_smem,
           stream>>>(q, weights, key_pool, pages, token_seq, n_visible, plan.capacity,
                     plan.keys_per_cta, q_scale, scores, hist);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (plan.score_only) return cudaSuccess;
  if (plan.capacity > 0) {
    indexer_collect_kernel<<<dim3(unsigned(plan.ctas_per_token), unsigned(tokens)),
                             k_collect_threads, 0, stream>>>(scores, hist, n_visible, plan.capacity,
                                                             plan.keys_per_cta, int(top_k),
                                                             cand_count, cand_list);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (plan.collect_only) return cudaSuccess;
  indexer_select_kernel<<<unsigned(tokens), k_select_threads, k_select_smem, stream>>>(
      scores, hist, pages, token_seq, n_visible, plan.capacity, int(top_k), cand_count, cand_list,
      out);
  return cudaGetLastError();
}

template cudaError_t indexer_topk_fast<float>(const float*, const float*, int64_t, int64_t, int64_t,
                                              const __nv_bfloat16*, int64_t, const int32_t*,
                                              int64_t, int64_t, const int32_t*, const int32_t*,
                                              int64_t, int64_t, float, const indexer_fast_plan&,
                                              void*, size_t, int32_t*, cudaStream_t);
template cudaError_t indexer_topk_fast<__nv_bfloat16>(
    const __nv_bfloat16*, const __nv_bfloat16*, int64_t, int64_t, int64_t, const __nv_bfloat16*,
    int64_t, const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t,
    float, const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);

}  // namespace dsv4::cuda::v0
