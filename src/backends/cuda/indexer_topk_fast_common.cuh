// Pieces of the indexer top-k (indexer_topk_fast.cu) shared by its score and select kernels: the
// histogram and candidate-list sizes, the per-token state, the benchmark trace stamps, the paged
// entry rows, and the 64-bit keys (entry_key) with the block scan, threshold search, sorts and
// warp-aggregated appends and counts over them. Included by indexer_topk_fast.cu only (one
// translation unit: the kernels and their host dispatch).
#pragma once

#include <cmath>

#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/paged_rows.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_bins = 4096;  // 12 bits of the key per histogram level

constexpr int k_select_threads = 1024;
constexpr int k_collect_threads = k_select_threads;  // one kernel collects, its last CTA selects
constexpr int k_collect_unroll = 4;                  // score loads in flight per thread
// Keys per collect CTA (plan.collect_keys): short chunks spread a small grid (T=1) over more SMs,
// long ones bound the per-CTA threshold search of a large one.
constexpr int64_t k_collect_keys_short = 4096;
constexpr int64_t k_collect_keys_long = 16384;

constexpr int k_max_candidates = 8192;
constexpr int k_max_select_ctas = 64;  // plan.select_ctas bound (each CTA repeats the list scan)
// Per token, the collect kernel lists the keys at or above the threshold bin: fewer than top_k
// above it plus at most k_max_candidates in it.
constexpr int64_t k_candidate_capacity = k_indexer_fast_max_top_k + k_max_candidates;
// counts [k_bins] | scratch [k_select_threads] | sel [max top_k] | cand [k_max_candidates], the
// final sort's exchange buffer (2 x k_select_threads) aliasing cand (dead by then).
constexpr int k_select_smem =
    k_bins * 4 + k_select_threads * 4 + int(k_indexer_fast_max_top_k) * 8 + k_max_candidates * 8;
static_assert(k_max_candidates >= 2 * k_select_threads, "sort buffer inside cand");

// Per-token state, zeroed before the score launch. bin / above / in_bin are written by the token's
// first collect CTA (or, heavy ties, the cluster select's CTA 0) when more entries are visible
// than top_k; plan.score_list leaves them zero (its select resolves the bin itself).
struct token_state {
  uint32_t ticket;      // collect CTAs of the token done
  uint32_t cand_count;  // keys listed (by the collect kernel, or plan.score_list's score CTAs)
  uint32_t bin;         // threshold bin (top 12 bits of the k-th key)
  uint32_t above;       // keys in higher bins (< top_k)
  uint32_t in_bin;      // keys in the threshold bin
  uint32_t pad[3];
};
static_assert(sizeof(token_state) == 32, "token_state keeps 16-byte alignment");

// Benchmarks (indexer_fast_set_trace, bench_attention --indexer-trace): %globaltimer stamps of
// token 0's CTAs, thread 0, at fixed points of the score, collect and select kernels (k_trace_*
// regions, 8 words per CTA); null (the default) records nothing.
__constant__ unsigned long long* g_indexer_trace;
constexpr int k_trace_score = 0;       // CTA c of the score kernel at 8 c
constexpr int k_trace_collect = 8192;  // CTA c of the collect kernel at k_trace_collect + 8 c
constexpr int k_trace_select = 16384;  // CTA c of the select kernel at k_trace_select + 8 c
// The zeroing kernel's stamps at k_trace_zero (block 0's entry and exit, the last block's exit);
// words 24576-32767 are unused (wip/idx25-variants stamps more score slots there: stamps in the
// list kernel's body change its SASS and registers, IDX25).
constexpr int k_trace_zero = 32768;  // (the buffer: k_trace_zero + 8 words)
// A value (not a time) at the slot, alike (the score kernel's passes and SM: slots 5 and 6).
__device__ __forceinline__ void trace_value(int region, int slot, uint64_t value) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || blockIdx.y != 0 || threadIdx.x != 0 || blockIdx.x >= 1024) return;
  tr[region + 8 * int(blockIdx.x) + slot] = value;
}
__device__ __forceinline__ uint32_t smid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
__device__ __forceinline__ void trace_stamp(int region, int slot) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || blockIdx.y != 0 || threadIdx.x != 0 || blockIdx.x >= 1024) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  tr[region + 8 * int(blockIdx.x) + slot] = now;
}
// The fast list kernel's prologue stamps (IDX29, session 21), built only with
// -DDSV4_IDX_PROLOGUE_STAMPS=1 (the list kernel's registers and loop change with them, so such a
// build's loop is not timed): CTA c < 512 of token 0 at k_trace_prologue + 16 c + slot, printed by
// bench_attention --indexer-trace (--indexer-prologue: also with L2 warm and with the prologue's
// inputs warm). trace_stamp_after reads the clock after a branch on `dep` (the value of a load),
// so the stamp is taken once that load landed.
#ifndef DSV4_IDX_PROLOGUE_STAMPS
#define DSV4_IDX_PROLOGUE_STAMPS 0
#endif
constexpr int k_trace_prologue = 24576;
__device__ __forceinline__ void trace_stamp_after(int slot, uint32_t dep) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || blockIdx.y != 0 || threadIdx.x != 0 || blockIdx.x >= 512) return;
  if (dep == 0x7fc0ffeeu) tr[k_trace_prologue + 16 * int(blockIdx.x) + 15] = 1;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now) : : "memory");
  tr[k_trace_prologue + 16 * int(blockIdx.x) + slot] = now;
}
// A prologue stamp where `on` (the fast list kernel) in a stamp build; nothing otherwise.
template <bool on>
__device__ __forceinline__ void prologue_stamp(int slot, uint32_t dep) {
  if constexpr (on && DSV4_IDX_PROLOGUE_STAMPS) trace_stamp_after(slot, dep);
}
// A stamp at trace word `word` (thread 0 of the calling block; the zeroing kernel's).
__device__ __forceinline__ void trace_stamp_word(int word) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || threadIdx.x != 0) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  tr[word] = now;
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

// Inclusive prefix sum of x over lanes [0, width) of the warp (lane order; every lane of the warp
// calls it; lanes at or past width add lanes below them too, ignored by the callers).
template <int width = k_warp_size>
__device__ __forceinline__ uint32_t warp_inclusive_sum(uint32_t x, int lane) {
#pragma unroll
  for (int o = 1; o < width; o *= 2) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

// Exclusive prefix sum over the block (thread order); `scratch` holds >= 32 values.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* scratch) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  const uint32_t x = warp_inclusive_sum(v, lane);
  if (lane == k_warp_size - 1) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / k_warp_size;
    const uint32_t s = warp_inclusive_sum(lane < warps ? scratch[lane] : 0u, lane);
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

// Descending bitonic sort of keys[0, n) in shared memory (n a power of two), any block size.
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

// Descending sort of keys[0, n), n <= blockDim.x = k_select_threads, one key per thread in a
// register: the same bitonic network, partners under 32 apart by shuffle, farther ones through
// `buf` (2 x k_select_threads, alternating halves so one barrier per stage suffices). Padding keys
// are 0, below every real key (whose score bits are never 0). Ends with a barrier.
__device__ __noinline__ void sort_desc_in_registers(unsigned long long* keys, int n,
                                                    unsigned long long* buf) {
  int n_pad = k_warp_size;
  while (n_pad < n) n_pad <<= 1;
  const int i = int(threadIdx.x);
  unsigned long long v = i < n ? keys[i] : 0ull;
  int half = 0;
  for (int k = 2; k <= n_pad; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      unsigned long long p;
      if (j >= k_warp_size) {
        unsigned long long* b = buf + half * k_select_threads;
        b[i] = v;
        __syncthreads();
        p = b[i ^ j];
        half ^= 1;
      } else {
        p = __shfl_xor_sync(0xffffffffu, v, j);
      }
      const bool take_max = ((i & j) == 0) == ((i & k) == 0);
      v = take_max ? (v > p ? v : p) : (v < p ? v : p);
    }
  if (i < n) keys[i] = v;  // each thread read only keys[i] above
  __syncthreads();
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

// The entry of a key (entry_key's inverse).
__device__ __forceinline__ int64_t key_entry(unsigned long long key) {
  return int64_t(0xFFFFFFFFull - (key & 0xFFFFFFFFull));
}
// The key's histogram bins: its top 12 bits (first level), and its next 12 bits (second level,
// for the keys of the first level's threshold bin).
__device__ __forceinline__ uint32_t key_bin(unsigned long long key) {
  return uint32_t(key >> 52);
}
__device__ __forceinline__ uint32_t key_sub_bin(unsigned long long key) {
  return uint32_t(key >> 40) & (k_bins - 1);
}

// Appends `key` where `take` (warp-uniform call): one shared or global atomic per warp.
template <typename counter_t>
__device__ __forceinline__ void warp_append(bool take, unsigned long long key, counter_t* count,
                                            unsigned long long* list) {
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  const int lane = threadIdx.x % k_warp_size;
  const int leader = __ffs(mask) - 1;
  uint32_t slot = 0;
  if (lane == leader) slot = atomicAdd(count, uint32_t(__popc(mask)));
  slot = __shfl_sync(0xffffffffu, slot, leader);
  if (take) list[slot + __popc(mask & ((1u << lane) - 1u))] = key;
}

// How many of the nf keys f[0..nf) exceed x, on every lane of the warp (four independent
// counters per lane keep the shared-memory loads in flight).
__device__ __forceinline__ uint32_t warp_count_greater(const unsigned long long* f, int nf,
                                                       unsigned long long x) {
  uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  int i = threadIdx.x % k_warp_size;
  for (; i + 3 * k_warp_size < nf; i += 4 * k_warp_size) {
    c0 += f[i] > x;
    c1 += f[i + k_warp_size] > x;
    c2 += f[i + 2 * k_warp_size] > x;
    c3 += f[i + 3 * k_warp_size] > x;
  }
  for (; i < nf; i += k_warp_size) c0 += f[i] > x;
  return __reduce_add_sync(0xffffffffu, c0 + c1 + c2 + c3);
}

}  // namespace

}  // namespace dsv4::cuda
