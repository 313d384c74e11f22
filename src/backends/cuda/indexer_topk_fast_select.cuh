// The collect and select kernels of the indexer top-k (steps 2 and 3 of indexer_topk_fast.cu's
// overview):
// collect_chunk and select_token, indexer_collect_select_kernel, indexer_select_kernel (with
// plan.score_list's list paths) and indexer_cluster_select_kernel. Included by
// indexer_topk_fast.cu only.
//
// Programmatic dependent launch (pdl.cuh): the collect-select kernel is launched with
// programmatic stream serialization. Every block waits (the predecessor's grid complete and its
// writes visible) before it reads anything or exits, so a dependent that runs knows every earlier
// launch of the chain has completed.
#pragma once

#include "backends/cuda/cluster.cuh"
#include "backends/cuda/indexer_topk_fast_common.cuh"
#include "backends/cuda/mma_sm80.cuh"  // smem_u32

namespace dsv4::cuda {

namespace {

// Key x of the nf keys f (a set closed upwards within token t's first top_k keys; warp-uniform
// call): its rank is the number of keys of f greater than it, and lane 0 writes its row there when
// below top_k.
template <typename row_fn>
__device__ __forceinline__ void rank_and_write_row(unsigned long long x,
                                                   const unsigned long long* f, int nf, int lane,
                                                   int top_k, int32_t* out, int64_t t,
                                                   const row_fn& row_of) {
  const uint32_t greater = warp_count_greater(f, nf, x);
  if (lane == 0 && greater < uint32_t(top_k))
    out[t * top_k + greater] = int32_t(row_of(key_entry(x)));
}

// This lane's count of the keys of f[0, padded) greater than x, padded a multiple of 4 x 32 (zero
// keys past the list: below every real key, never counted). The loop stays rolled: one short loop
// instead of the unrolled remainder loops of warp_count_greater (IDX36).
__device__ __forceinline__ uint32_t lane_count_greater_padded(const unsigned long long* f,
                                                              uint32_t padded,
                                                              unsigned long long x) {
  uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
#pragma unroll 1
  for (uint32_t i = threadIdx.x % k_warp_size; i < padded; i += 4 * k_warp_size) {
    c0 += f[i] > x;
    c1 += f[i + k_warp_size] > x;
    c2 += f[i + 2 * k_warp_size] > x;
    c3 += f[i + 3 * k_warp_size] > x;
  }
  return c0 + c1 + c2 + c3;
}

// Output row of entry s: pages.row(s), from the block ids copied to blocks_s where they fit.
__device__ __forceinline__ int64_t select_row_of(const paged_entries& pages,
                                                 const int32_t* blocks_s, bool blocks_in_smem,
                                                 int64_t s) {
  if (!blocks_in_smem) return pages.row(s);
  // s < 2^32 (key_entry): one 32-bit division where block_size fits 32 bits (else block 0).
  const uint64_t size = uint64_t(pages.block_size);
  const int64_t block = size > 0xFFFFFFFFull ? 0 : int64_t(uint32_t(s) / uint32_t(size));
  const int64_t b = block < pages.table_width ? int64_t(blocks_s[block]) : -1;
  const int64_t row = b < 0 ? -1 : b * pages.block_size + (s - block * pages.block_size);
  return row >= pages.pool_rows ? int64_t(-1) : row;
}

// plan.list_rank's ranking (indexer_select_kernel): the keys f[j0], f[j0 + step], ... below
// `listed` (warp-uniform), each against f[0, padded), rows to out_t[rank] where rank < top_k. One
// short function (IDX36's A/B build, H200 chained top-512: 20.28-20.37 -> 20.01-20.22 us per call;
// its time after F is the count's throughput and the row's dependent chain, not code fetch).
__device__ __noinline__ void rank_list_compact(const unsigned long long* f, uint32_t padded,
                                               uint32_t j0, uint32_t listed, uint32_t step,
                                               int top_k, int32_t* out_t, paged_entries pages,
                                               const int32_t* blocks_s, bool blocks_in_smem) {
  const int lane = threadIdx.x % k_warp_size;
  for (uint32_t j = j0; j < listed; j += step) {
    const unsigned long long x = f[j];
    const uint32_t greater =
        __reduce_add_sync(0xffffffffu, lane_count_greater_padded(f, padded, x));
    if (lane == 0 && greater < uint32_t(top_k))
      out_t[greater] = int32_t(select_row_of(pages, blocks_s, blocks_in_smem, key_entry(x)));
  }
}

// Token t's histogram (k_bins words, L2: written by another launch) into shared memory.
__device__ __forceinline__ void load_hist(uint32_t* dst, const uint32_t* hist, int64_t t) {
  for (int b = threadIdx.x; b < k_bins; b += k_select_threads)
    dst[b] = __ldcg(&hist[t * k_bins + b]);
}

// v[u]: the score of entry base + threadIdx.x + u k_select_threads (-inf at hi and past it), the
// loads in flight together (L2: the scores were written by another launch).
template <int unroll>
__device__ __forceinline__ void load_chunk_scores(float (&v)[unroll], const float* sc, int64_t base,
                                                  int64_t hi) {
#pragma unroll
  for (int u = 0; u < unroll; ++u) {
    const int64_t s = base + threadIdx.x + u * k_select_threads;
    v[u] = s < hi ? __ldcg(sc + s) : -INFINITY;
  }
}

// The chunk blockIdx.x of token blockIdx.y (n > top_k visible entries): finds the token's
// threshold bin from its histogram, lists the chunk's keys at or above it (warp-aggregated
// atomics) and histograms the next 12 bits of the keys inside the bin (`sub`: k_bins words of
// shared memory, scan_*: 32 and 2). Nothing is listed when the bin is too full: the select then
// resolves more bits itself. The first chunk's CTA records the threshold in `state`.
__device__ __forceinline__ void collect_chunk(uint32_t* sub, uint32_t* scan_scratch,
                                              uint32_t* scan_result, const float* scores,
                                              int64_t score_stride, const uint32_t* hist, int64_t n,
                                              int top_k, int64_t collect_keys, token_state* state,
                                              uint32_t* hist2, unsigned long long* cand_list,
                                              bool lean) {
  const int64_t t = blockIdx.y;
  const int64_t lo = int64_t(blockIdx.x) * collect_keys;
  const int64_t hi = min(lo + collect_keys, n);
  const float* sc = scores + t * score_stride;
  float v[k_collect_unroll];
  const auto load_scores = [&](int64_t base) { load_chunk_scores(v, sc, base, hi); };
  // plan.lean_select: the first round's scores requested with the histogram (one round trip
  // instead of two before the first keys are listed).
  if (lean) load_scores(lo);
  load_hist(sub, hist, t);
  __syncthreads();
  const uint2 th = find_threshold(sub, k_bins, uint32_t(top_k), scan_scratch, scan_result);
  trace_stamp(k_trace_collect, 2);
  const uint32_t bin = th.x, in_bin = sub[th.x];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    state[t].bin = bin;
    state[t].above = th.y;
    state[t].in_bin = in_bin;
  }
  if (in_bin > k_max_candidates) return;  // (uniform over the token)
  __syncthreads();                        // every thread has read sub[th.x]
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads) sub[b] = 0;
  __syncthreads();
  unsigned long long* list = cand_list + t * k_candidate_capacity;
  for (int64_t base = lo; base < hi; base += k_collect_threads * k_collect_unroll) {
    if (!lean || base != lo) load_scores(base);
#pragma unroll
    for (int u = 0; u < k_collect_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_collect_threads;
      const unsigned long long key = entry_key(v[u], s);
      const uint32_t top = key_bin(key);
      const bool take = s < hi && top >= bin;
      if (s < hi && top == bin) atomicAdd(&sub[key_sub_bin(key)], 1u);
      warp_append(take, key, &state[t].cand_count, list);
    }
  }
  trace_stamp(k_trace_collect, 3);
  __syncthreads();
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads)
    if (sub[b]) atomicAdd(&hist2[t * k_bins + b], sub[b]);
  trace_stamp(k_trace_collect, 4);
}

// The selection of token t by one CTA of k_select_threads over its k_select_smem bytes of shared
// memory, after every collect CTA of the token is done.
// `given` (plan.score_list, no collect launch): the threshold bin, the keys above it and in it
// (given[0..2]) come from the caller, and the keys are collected by a scan of the scores (the
// candidate list is not the collect's).
__device__ __forceinline__ void select_token(unsigned char* smem, const float* scores,
                                             int64_t score_stride, const token_state* state,
                                             const uint32_t* hist2, paged_entries pages,
                                             const int32_t* token_seq, const int32_t* n_visible,
                                             int64_t capacity, int top_k,
                                             const unsigned long long* cand_list, int32_t* out,
                                             int64_t t, const uint32_t* given = nullptr) {
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);  // k_bins
  uint32_t* scratch = counts + k_bins;                   // k_select_threads
  unsigned long long* sel = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* cand = sel + k_indexer_fast_max_top_k;  // k_max_candidates
  unsigned long long* sort_buf = cand;  // 2 x k_select_threads, once cand is consumed
  __shared__ uint32_t n_sel, n_cand, result[2];

  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int keep = int(top_k < n ? int64_t(top_k) : n);
  pages.seq = token_seq[t];
  const float* sc = scores + t * score_stride;
  if (threadIdx.x == 0) n_sel = n_cand = 0;
  __syncthreads();
  // A key (warp-uniform call, `valid` false past the keys) whose leading bits `pre` are above the
  // threshold prefix is selected, one with exactly the prefix a candidate.
  const auto sel_or_cand = [&](bool valid, unsigned long long key, unsigned long long pre,
                               unsigned long long prefix) {
    warp_append(valid && pre > prefix, key, &n_sel, sel);
    warp_append(valid && pre == prefix, key, &n_cand, cand);
  };
  // keys[0, n) sorted descending, padded with zero keys (below every real key) to a power of two.
  const auto sort_padded = [&](unsigned long long* keys, int n) {
    const int padded = pow2_at_least(n);
    for (int i = n + int(threadIdx.x); i < padded; i += k_select_threads) keys[i] = 0;
    __syncthreads();
    bitonic_sort_desc(keys, padded);
  };

  if (keep > 0 && n <= top_k) {  // every visible entry is selected
    for (int64_t s = threadIdx.x; s < n; s += k_select_threads) sel[s] = entry_key(sc[s], s);
  } else if (keep > 0) {
    const uint32_t bin = given ? given[0] : __ldcg(&state[t].bin);
    uint32_t above = given ? given[1] : __ldcg(&state[t].above);
    uint32_t in_bin = given ? given[2] : __ldcg(&state[t].in_bin);
    if (in_bin <= k_max_candidates && !given) {
      // The collect kernel listed the keys at or above the bin and histogrammed
      // the bin's keys on their next 12 bits: the 24-bit threshold prefix, then
      // one pass over the list.
      load_hist(counts, hist2, t);
      __syncthreads();
      const uint2 th = find_threshold(counts, k_bins, uint32_t(keep) - above, scratch, result);
      const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th.x;
      const uint32_t listed = __ldcg(&state[t].cand_count);
      const unsigned long long* list = cand_list + t * k_candidate_capacity;
      for (uint32_t base = 0; base < listed; base += k_select_threads) {
        const uint32_t i = base + threadIdx.x;
        const unsigned long long key = i < listed ? __ldcg(list + i) : 0ull;
        const unsigned long long pre = key >> 40;
        sel_or_cand(i < listed, key, pre, prefix);
      }
    } else {
      // Heavy ties (or `given`): resolve up to 8 more bits at a time with passes over the scores
      // while the bin holds too many keys, then collect the keys above the prefix (selected) and at
      // it (candidates) in one pass.
      unsigned long long prefix = bin;
      int bits = 12;  // resolved leading bits of the key
      while (in_bin > k_max_candidates) {
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
        const uint2 th =
            find_threshold(counts, 1 << width, uint32_t(keep) - above, scratch, result);
        prefix = (prefix << width) | th.x;
        bits += width;
        above += th.y;
        in_bin = counts[th.x];
        __syncthreads();
      }
      const int shift = 64 - bits;
      for (int64_t base = 0; base < n; base += k_select_threads) {
        const int64_t s = base + threadIdx.x;
        const unsigned long long key = s < n ? entry_key(sc[s], s) : 0ull;
        const unsigned long long pre = shift == 64 ? 0 : key >> shift;
        sel_or_cand(s < n, key, pre, prefix);
      }
    }
    __syncthreads();
    // sel: the keys above the threshold prefix (ns < keep, all selected); cand: the nc >= need keys
    // at it, of which the best `need` complete the selection.
    const int ns = int(n_sel), nc = int(n_cand), need = keep - ns;
    if (nc <= k_select_threads) {
      // Rank among the candidates (distinct keys): the best `need` land at ns +
      // rank.
      if (int(threadIdx.x) < nc) {
        const unsigned long long key = cand[threadIdx.x];
        int rank = 0;
        for (int j = 0; j < nc; ++j) rank += cand[j] > key;
        if (rank < need) sel[ns + rank] = key;
      }
    } else {
      sort_padded(cand, nc);
      for (int i = threadIdx.x; i < need; i += k_select_threads) sel[ns + i] = cand[i];
    }
  }
  __syncthreads();
  // Only the selection is sorted.
  if (keep <= k_select_threads) {
    sort_desc_in_registers(sel, keep, sort_buf);
  } else {
    sort_padded(sel, keep);
  }
  for (int i = threadIdx.x; i < top_k; i += k_select_threads) {
    int32_t row = -1;
    if (i < keep) {
      const int64_t s = key_entry(sel[i]);
      row = int32_t(pages.row(s));
    }
    out[t * top_k + i] = row;
  }
}

// Grid (chunk of plan.collect_keys keys, token), a programmatic dependent of the score kernel:
// every CTA collects its chunk (collect_chunk). With select_ctas == 0 the token's last CTA to
// finish (atomic ticket after a fence, so every other CTA's list, counts and histogram are visible
// to it) selects; otherwise indexer_select_kernel does, a programmatic dependent of this grid.
__global__ void __launch_bounds__(k_select_threads)
    indexer_collect_select_kernel(const float* scores, int64_t score_stride, const uint32_t* hist,
                                  token_state* state, uint32_t* hist2,
                                  unsigned long long* cand_list, paged_entries pages,
                                  const int32_t* token_seq, const int32_t* n_visible,
                                  int64_t capacity, int top_k, int64_t collect_keys,
                                  bool fused_select, bool lean, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ bool last_cta;
  const int64_t t = blockIdx.y;
  // No launch of the chain writes n_visible: read before the wait.
  trace_stamp(k_trace_collect, 0);
  const int64_t n = clamp_visible(n_visible[t], capacity);
  pdl_wait();
  trace_stamp(k_trace_collect, 1);
  // The separate select kernel may be scheduled now: it waits for this grid's completion.
  pdl_trigger();
  // n <= top_k: the select takes every entry; past n: nothing to collect.
  if (n > top_k && int64_t(blockIdx.x) * collect_keys < n)
    collect_chunk(reinterpret_cast<uint32_t*>(smem), reinterpret_cast<uint32_t*>(smem) + k_bins,
                  reinterpret_cast<uint32_t*>(smem) + k_bins + 32, scores, score_stride, hist, n,
                  top_k, collect_keys, state, hist2, cand_list, lean);
  if (!fused_select) return;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_cta = atomicAdd(&state[t].ticket, 1u) + 1 == gridDim.x;
  __syncthreads();
  if (!last_cta) return;
  __threadfence();
  select_token(smem, scores, score_stride, state, hist2, pages, token_seq, n_visible, capacity,
               top_k, cand_list, out, t);
}

// The select of token blockIdx.y over gridDim.x CTAs, after the collect grid (programmatic
// dependent): every CTA reads the second histogram, resolves the 24-bit threshold prefix and
// copies the listed keys at or above it (F, about top_k of them: every key above the threshold
// prefix and the few at it) into shared memory, and, into a short list O, those of them whose list
// position i has i % gridDim.x == blockIdx.x (the list is the same for every CTA, so the shares
// partition F). Each warp then ranks keys of O against all of F (rank = number of keys of F
// greater than it; four independent partial counts per lane) and writes the keys whose rank is
// below keep straight to out[rank]. A key greater than one of F is in F itself, so the rank in F
// is the rank among all the token's keys; keys are distinct, so ranks are too, and no sort is
// needed. Tokens with n <= top_k (everything selected) or a threshold bin too full to list (heavy
// ties) take the single-CTA select_token in CTA 0.
// plan.lean_select: the token's block-table row (up to k_select_prefetch_blocks ids) is copied
// into shared memory (after O) before the wait, so the output rows need no global round trip;
// the token state and the second histogram are requested together right after the wait.
// from_list (plan.score_list, lean): the list is the score CTAs' (every key in or above the
// threshold bin, or an overflowing count) and `hist2` is the token's first histogram. A list of at
// most rank_max keys is ranked whole, each CTA its share of list positions (plan.list_rank, no
// histogram); else the CTAs resolve the threshold bin from the histogram, and with at most
// direct_max keys in or above it F is those keys (plan.list_direct, no second histogram), else the
// second histogram is built from the list as the collect would have. An overflowing list goes to
// select_token's scan of the scores.
constexpr int k_select_kernel_smem = k_select_smem + int(k_candidate_capacity) * 8;  // + O
constexpr int k_select_prefetch_blocks = 8192;
constexpr int k_select_kernel_smem_lean = k_select_kernel_smem + k_select_prefetch_blocks * 4;
static_assert(k_bins % k_select_threads == 0, "histogram words per select thread");
__global__ void __launch_bounds__(k_select_threads)
    indexer_select_kernel(const float* scores, int64_t score_stride, const token_state* state,
                          const uint32_t* hist2, const unsigned long long* cand_list,
                          paged_entries pages, const int32_t* token_seq, const int32_t* n_visible,
                          int64_t capacity, int top_k, bool lean, bool from_list,
                          uint32_t direct_max, uint32_t rank_max, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint32_t n_f, n_own, result[2], given[3];
  trace_stamp(k_trace_select, 0);
  const int64_t t = blockIdx.y;
  // No launch of the chain writes these: read before the wait.
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int32_t seq = token_seq[t];
  int32_t* blocks_s = reinterpret_cast<int32_t*>(smem + k_select_kernel_smem);
  const bool blocks_in_smem = lean && pages.table_width <= k_select_prefetch_blocks;
  if (blocks_in_smem) {
    const int32_t* row =
        paged_table_row(pages.block_table, pages.table_rows, pages.table_width, seq);
    for (int i = threadIdx.x; i < pages.table_width; i += k_select_threads)
      blocks_s[i] = row ? row[i] : -1;
  }
  pdl_wait();
  trace_stamp(k_trace_select, 1);
  uint32_t in_bin = 0, bin = 0, above = 0, listed = 0;
  uint32_t hist_words[k_bins / k_select_threads];
  // lean: the list's first k_select_threads entries requested with the state (entries past the
  // count are stale scratch, never used), so the usual list of < 1024 keys needs no third trip.
  unsigned long long first_key = 0;
  if (lean && n > top_k) {
    if (!from_list) {
      in_bin = __ldcg(&state[t].in_bin);
      bin = __ldcg(&state[t].bin);
      above = __ldcg(&state[t].above);
    }
    listed = __ldcg(&state[t].cand_count);
    first_key = __ldcg(cand_list + t * k_candidate_capacity + threadIdx.x);
    // (plan.list_rank with a short list needs no histogram.)
    if (!from_list || listed > rank_max) {
#pragma unroll
      for (int u = 0; u < k_bins / k_select_threads; ++u)
        hist_words[u] = __ldcg(&hist2[t * k_bins + threadIdx.x + u * k_select_threads]);
    }
  } else if (n > top_k) {
    in_bin = __ldcg(&state[t].in_bin);
  }
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);  // k_bins
  uint32_t* scratch = counts + k_bins;                   // k_select_threads
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  pages.seq = seq;
  // (lean) The histogram words read with the state, into counts.
  const auto counts_from_hist_words = [&] {
#pragma unroll
    for (int u = 0; u < k_bins / k_select_threads; ++u)
      counts[threadIdx.x + u * k_select_threads] = hist_words[u];
  };
  const auto row_of = [&](int64_t s) { return select_row_of(pages, blocks_s, blocks_in_smem, s); };
  if (from_list && n > top_k && listed <= rank_max) {  // (uniform over the token's CTAs)
    // plan.list_rank: every key at or above the threshold is listed, and a listed key x with a
    // greater key y unlisted is not selected (y below the threshold bin), so the number of listed
    // keys greater than x is x's rank wherever that rank is below top_k: each CTA ranks its share
    // (list positions i % gridDim.x == blockIdx.x) against the whole list, no histogram.
    // F padded with zero keys to a multiple of 4 x 32 (rank_list_compact's loop).
    unsigned long long* f = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
    const unsigned long long* list = cand_list + t * k_candidate_capacity;
    const uint32_t padded = (listed + 127u) & ~127u;
    for (uint32_t base = 0; base < padded; base += k_select_threads) {
      const uint32_t i = base + threadIdx.x;
      if (i < padded) f[i] = i >= listed ? 0ull : base == 0 ? first_key : __ldcg(list + i);
    }
    __syncthreads();
    trace_stamp(k_trace_select, 3);
    const uint32_t ctas = gridDim.x;
    rank_list_compact(f, padded, blockIdx.x + ctas * uint32_t(warp), listed,
                      ctas * uint32_t(k_select_threads / k_warp_size), top_k, out + t * top_k,
                      pages, blocks_s, blocks_in_smem);
    trace_stamp(k_trace_select, 4);
    return;
  }
  if (from_list && n > top_k) {
    // plan.score_list (`hist2` is the token's first histogram; the list holds every key in or
    // above the threshold bin, or overflowed): the threshold bin first.
    counts_from_hist_words();
    __syncthreads();
    const uint2 th = find_threshold(counts, k_bins, uint32_t(top_k), scratch, result);
    bin = th.x;
    above = th.y;
    in_bin = counts[th.x];
    if (listed > uint32_t(k_candidate_capacity) && in_bin <= k_max_candidates)
      in_bin = k_max_candidates + 1;  // (the select_token scan below)
    if (threadIdx.x == 0) {
      given[0] = bin;
      given[1] = above;
      given[2] = counts[th.x];
    }
    __syncthreads();  // every thread read counts[th.x]
  }
  if (n <= top_k || in_bin > k_max_candidates) {  // uniform over the token's CTAs
    if (blockIdx.x == 0)
      select_token(smem, scores, score_stride, state, hist2, pages, token_seq, n_visible, capacity,
                   top_k, cand_list, out, t, from_list && n > top_k ? given : nullptr);
    return;
  }
  const int keep = top_k;  // n > top_k
  // F: up to k_candidate_capacity keys (the list's capacity), over select_token's sel and cand;
  // O after it (this CTA's share of F, as many at most).
  unsigned long long* f = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* own = f + k_candidate_capacity;
  if (threadIdx.x == 0) n_f = n_own = 0;
  // plan.list_direct: F = the listed keys in or above the threshold bin (at most direct_max of
  // them), ranked without the second histogram (F is closed upwards, so ranks in F are exact).
  const bool direct = from_list && above + in_bin <= direct_max;  // (uniform)
  if (direct) {
  } else if (from_list) {
    // The second histogram (next 12 bits of the bin's keys) from the list.
#pragma unroll
    for (int u = 0; u < k_bins / k_select_threads; ++u)
      counts[threadIdx.x + u * k_select_threads] = 0;
    __syncthreads();
    for (uint32_t base = 0; base < listed; base += k_select_threads) {
      const uint32_t i = base + threadIdx.x;
      const unsigned long long key =
          i < listed ? (base == 0 ? first_key : __ldcg(cand_list + t * k_candidate_capacity + i))
                     : 0ull;
      if (i < listed && uint32_t(key >> 52) == bin) atomicAdd(&counts[key_sub_bin(key)], 1u);
    }
  } else if (lean) {
    counts_from_hist_words();
  } else {
    load_hist(counts, hist2, t);
  }
  __syncthreads();
  if (!lean) {
    bin = __ldcg(&state[t].bin);
    above = __ldcg(&state[t].above);
  }
  const uint2 th = direct ? make_uint2(0u, 0u)
                          : find_threshold(counts, k_bins, uint32_t(keep) - above, scratch, result);
  trace_stamp(k_trace_select, 2);
  const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th.x;
  if (!lean) listed = __ldcg(&state[t].cand_count);
  const unsigned long long* list = cand_list + t * k_candidate_capacity;
  const uint32_t ctas = gridDim.x;
  for (uint32_t base = 0; base < listed; base += k_select_threads) {
    const uint32_t i = base + threadIdx.x;
    const unsigned long long key =
        i < listed ? (lean && base == 0 ? first_key : __ldcg(list + i)) : 0ull;
    const bool in_f = i < listed && (key >> 40) >= prefix;
    warp_append(in_f, key, &n_f, f);
    warp_append(in_f && i % ctas == blockIdx.x, key, &n_own, own);
  }
  __syncthreads();
  trace_stamp(k_trace_select, 3);
  const int nf = int(n_f), no = int(n_own);
  for (int j = warp; j < no; j += k_select_threads / k_warp_size)
    rank_and_write_row(own[j], f, nf, lane, top_k, out, t, row_of);
  trace_stamp(k_trace_select, 4);
}

// plan.cluster_select: collect and select of token blockIdx.y in one launch, a cluster of
// k_csel_ctas CTAs (a programmatic dependent of the score kernel). CTA r scans entries
// [r chunk, (r + 1) chunk): every CTA finds the threshold bin from the token's histogram, lists
// its keys at or above it in its own shared memory (L) and histograms the next 12 bits of the
// bin's keys (sub). After a cluster barrier, CTA r adds bins [512 r, 512 r + 512) of every CTA's
// sub (red), and after a second barrier every CTA reads the summed histogram from the 8 CTAs,
// resolves the 24-bit threshold prefix and copies the listed keys at or above it from every CTA's
// L into its F (about top_k keys). Each CTA ranks its own listed keys of F against all of F (as
// indexer_select_kernel) and writes rank < top_k to out[rank]. No global list, second histogram,
// atomic ticket or third launch. Tokens with n <= top_k or a threshold bin too full to list (heavy
// ties) take the single-CTA select_token in CTA 0 (the state's bin, above and in_bin written by
// it first). Every CTA passes a final cluster barrier (its L and red are read by the others).
constexpr int k_csel_ctas = 8;     // a portable cluster size
constexpr int k_csel_unroll = 16;  // score loads in flight per thread
constexpr int k_csel_share = k_bins / k_csel_ctas;
static_assert(k_csel_share <= k_select_threads, "one summed bin per thread");
// counts [k_bins] | sub [k_bins] | red [k_csel_share] | scratch [k_select_threads] | L | F.
constexpr int k_csel_smem =
    (2 * k_bins + k_csel_share + k_select_threads) * 4 + 2 * int(k_candidate_capacity) * 8;
static_assert(k_csel_smem >= k_select_smem, "select_token's shared memory inside");
__global__ void __launch_bounds__(k_select_threads)
    indexer_cluster_select_kernel(const float* scores, int64_t score_stride, const uint32_t* hist,
                                  token_state* state, paged_entries pages, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t capacity, int top_k,
                                  int64_t chunk, int probe, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint32_t n_list, n_f, list_counts[k_csel_ctas], result[2];
  const int64_t t = blockIdx.y;
  const uint32_t rank = cluster::rank();
  // No launch of the chain writes these: read before the wait.
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int32_t seq = token_seq[t];
  pdl_wait();
  if (probe == 1) return;  // (benchmark probes, plan.cluster_probe: results wrong)
  if (n <= top_k) {        // uniform over the cluster (no shared memory of another CTA is read)
    if (rank == 0)
      select_token(smem, scores, score_stride, state, nullptr, pages, token_seq, n_visible,
                   capacity, top_k, nullptr, out, t);
    return;
  }
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);
  uint32_t* sub = counts + k_bins;
  uint32_t* red = sub + k_bins;
  uint32_t* scratch = red + k_csel_share;
  unsigned long long* list = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* f = list + k_candidate_capacity;
  const int64_t lo = int64_t(rank) * chunk;
  const int64_t hi = min(lo + chunk, n);
  const float* sc = scores + t * score_stride;
  float v[k_csel_unroll];
  const auto load_scores = [&](int64_t base) { load_chunk_scores(v, sc, base, hi); };
  load_scores(lo);  // with the histogram
  for (int b = threadIdx.x; b < k_bins; b += k_select_threads) {
    counts[b] = __ldcg(&hist[t * k_bins + b]);
    sub[b] = 0;
  }
  if (threadIdx.x == 0) n_list = n_f = 0;
  __syncthreads();
  const uint2 th = find_threshold(counts, k_bins, uint32_t(top_k), scratch, result);
  const uint32_t bin = th.x, above = th.y, in_bin = counts[th.x];
  if (in_bin > k_max_candidates) {  // heavy ties (uniform over the cluster)
    if (rank == 0) {
      if (threadIdx.x == 0) {
        state[t].bin = bin;
        state[t].above = above;
        state[t].in_bin = in_bin;
      }
      __syncthreads();  // select_token reads them back
      select_token(smem, scores, score_stride, state, nullptr, pages, token_seq, n_visible,
                   capacity, top_k, nullptr, out, t);
    }
    return;
  }
  for (int64_t base = lo; base < hi; base += int64_t(k_select_threads) * k_csel_unroll) {
    if (base != lo) load_scores(base);
#pragma unroll
    for (int u = 0; u < k_csel_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_select_threads;
      const unsigned long long key = entry_key(v[u], s);
      const uint32_t top = key_bin(key);
      if (s < hi && top == bin) atomicAdd(&sub[key_sub_bin(key)], 1u);
      warp_append(s < hi && top >= bin, key, &n_list, list);
    }
  }
  __syncthreads();
  if (probe == 2) return;
  cluster::sync();  // every CTA's sub, list and n_list complete
  if (threadIdx.x < k_csel_share) {
    const uint32_t addr = smem_u32(sub + rank * k_csel_share + threadIdx.x);
    uint32_t sum = 0;
#pragma unroll
    for (uint32_t r = 0; r < k_csel_ctas; ++r) sum += cluster::load_u32(cluster::map(addr, r));
    red[threadIdx.x] = sum;
  }
  if (threadIdx.x < k_csel_ctas)
    list_counts[threadIdx.x] = cluster::load_u32(cluster::map(smem_u32(&n_list), threadIdx.x));
  cluster::sync();  // every CTA's red complete
  for (int b = threadIdx.x; b < k_bins; b += k_select_threads)
    counts[b] = cluster::load_u32(
        cluster::map(smem_u32(red + b % k_csel_share), uint32_t(b / k_csel_share)));
  __syncthreads();
  const uint2 th2 = find_threshold(counts, k_bins, uint32_t(top_k) - above, scratch, result);
  const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th2.x;
  if (probe == 3) {
    cluster::sync();
    return;
  }
  // F: the listed keys at or above the prefix of every CTA, one flat index over the lists.
  uint32_t starts[k_csel_ctas + 1];
  starts[0] = 0;
#pragma unroll
  for (int r = 0; r < k_csel_ctas; ++r) starts[r + 1] = starts[r] + list_counts[r];
  const uint32_t total = starts[k_csel_ctas];
  for (uint32_t base = 0; base < total; base += k_select_threads) {
    const uint32_t i = base + threadIdx.x;
    unsigned long long key = 0;
    if (i < total) {
      uint32_t r = 0, start = 0;  // the list holding flat index i (empty lists skipped)
#pragma unroll
      for (int q = 1; q < k_csel_ctas; ++q)
        if (i >= starts[q]) {
          r = uint32_t(q);
          start = starts[q];
        }
      key = cluster::load_u64(cluster::map(smem_u32(list + (i - start)), r));
    }
    warp_append(i < total && (key >> 40) >= prefix, key, &n_f, f);
  }
  __syncthreads();
  const int nf = int(n_f), own = probe == 4 ? 0 : int(list_counts[rank]);
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  pages.seq = seq;
  for (int j = warp; j < own; j += k_select_threads / k_warp_size) {
    const unsigned long long x = list[j];
    if ((x >> 40) < prefix) continue;  // (uniform over the warp)
    rank_and_write_row(x, f, nf, lane, top_k, out, t, [&](int64_t s) { return pages.row(s); });
  }
  cluster::sync();  // no CTA exits while another may still read its list, red or n_list
}

}  // namespace

}  // namespace dsv4::cuda
