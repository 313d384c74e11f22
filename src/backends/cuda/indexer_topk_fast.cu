// Indexer top-k in two or three launches after zeroing the per-token state and histograms (a
// memset, or indexer_zero_kernel with plan.zero_kernel): the scores, then the collect with its
// last CTA selecting (select_ctas == 0) or the collect and a split select, or (plan.score_list)
// the scores listing their own candidates and the split select.
//
// 1. indexer_score_kernel, grid (key chunk, token), 4 warps, two CTAs per SM: the token's
//    64 x 128 query in shared memory (bf16), keys streamed 128 rows per pass through a ring of
//    cp.async buffers (16-byte chunk c of row r stored at c ^ (r & 7)). Warp w computes
//    S^T = K Q^T for keys 32 w .. +32 (M = keys, N = heads, K = dims) on mma.sync; lane quads
//    then reduce sum_h w_h relu(s) across the heads they hold. Scores go to scratch and into a
//    4096-bin histogram of their top 12 bits (shared, then added to the token's global one).
//    E4M3 keys (indexer_topk_fast_fp8) are widened to bf16 in registers (see k_fp8_dim).
//    FP4 keys on wgmma with block_size % 128 == 0 (plan.score_bulk): a pass is 128 consecutive
//    pool rows of one block, fetched by thread 0 as two bulk copies completing on the stage's
//    mbarrier; with plan.score_decouple every thread releases the stage on an "empty" mbarrier
//    once its codes are in registers (no CTA barrier per pass). With plan.zero_kernel the state
//    and histograms are zeroed by a kernel the score kernel follows as a programmatic dependent.
//    Those bulk passes on 8 warps run in indexer_score_three_kernel (plan.score_three, default):
//    the same passes with the A fragments widened one k-step ahead of the wgmmas and the weights
//    in shared memory (70 registers), so three CTAs fit an SM. Keys widened into shared memory
//    for SS wgmmas with two accumulators (score_ss, session 10) measured slower and were removed
//    (bench/kernels/results/2026-11-26_s10_idx8_NOTES.md).
// 2. indexer_collect_select_kernel, grid (chunk of plan.collect_keys, token), 1024 threads, a
//    programmatic dependent of 1. Every CTA finds the threshold bin (the bin of the token's k-th
//    key) from the histogram, lists its chunk's keys at or above it (the token's candidates; one
//    atomic per warp) and adds the next 12 bits of the keys inside the bin to a second histogram.
//    With plan.select_ctas == 0 the token's last CTA (atomic ticket) then selects: the second
//    histogram gives the 24-bit threshold prefix; listed keys above it are selected (fewer than
//    k), the best of the few keys with exactly that prefix are ranked in, and only the k selected
//    keys are sorted (bitonic network in registers, shuffles below 32 apart).
// 3. indexer_select_kernel (plan.select_ctas > 0), grid (select_ctas, token), 1024 threads, a
//    programmatic dependent of 2: every CTA resolves the 24-bit prefix and keeps the listed keys at
//    or above it (about k); each CTA ranks a share of them against all (rank = keys greater) and
//    writes rank < k straight to its output position, so no sort and no single-CTA tail.
// With plan.score_list (one-wave grids, FP4 keys on indexer_score_three_kernel) there is no
// collect launch: after its histogram flush each score CTA reads a snapshot of the token's coarse
// (top 8 bits) and fine histograms, whose counts are counts of real keys, so the bin where the
// snapshot's count from the top reaches k is at or below the true threshold bin; the CTA appends
// its keys at or above that bin to the token's list (score_list_keys). The select kernel then ranks
// the whole list when it is short (list_rank), else resolves the threshold from the first
// histogram; an overflowing list or heavy ties rescan the scores in CTA 0.
// Keys are 64-bit (ordered score bits << 32 | ~entry), unique per entry, so "higher score first,
// equal scores lower entry first" is plain descending key order. When the threshold bin holds
// more keys than the candidate buffer (heavy ties), nothing is listed: the selecting CTA resolves
// 8 more bits at a time with histogram passes over all the scores, then collects in one pass.
// The kernels: indexer_topk_fast_score.cuh (1), indexer_topk_fast_select.cuh (2, 3), on the pieces
// of indexer_topk_fast_common.cuh; this file holds the plan and the host dispatch. One translation
// unit: the dispatch launches kernels of an anonymous namespace, and every kernel stamps through
// the one __constant__ g_indexer_trace (without separable compilation each unit would hold its
// own, each to be set by indexer_fast_set_trace).
#include <algorithm>

#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/indexer_topk_fast_common.cuh"
#include "backends/cuda/indexer_topk_fast_score.cuh"
#include "backends/cuda/indexer_topk_fast_select.cuh"
#include "backends/cuda/kernel_attributes.h"

namespace dsv4::cuda {

namespace {

int64_t score_stride_of(int64_t capacity) {
  return ceil_div(capacity, 4) * 4;
}

}  // namespace

void indexer_fast_plan_set_ctas_per_sm(indexer_fast_plan& p, int ctas_per_sm, int sm_count,
                                       int64_t block_size) {
  if (p.tokens <= 0 || p.capacity <= 0) return;
  const int64_t tokens = p.tokens;
  const int64_t sms = std::max(sm_count, 1);
  const int64_t per_sm = std::max(ctas_per_sm, 1);
  // The CTA's block ids must fit its shared list (k_max_range_blocks).
  const int64_t range_cap = std::max<int64_t>(k_pass, (1024 * block_size) / k_pass * k_pass);
  // Two CTAs per SM (see k_stages_bf16; three with plan.score_three): CTAs of the whole grid in
  // one wave when that suffices.
  const int64_t want = std::max<int64_t>(1, ceil_div(per_sm * sms, tokens));
  p.keys_per_cta = std::max<int64_t>(k_pass, ceil_div(ceil_div(p.capacity, want), k_pass) * k_pass);
  // When the grid spans several waves anyway, short CTAs (512 keys) score faster: one CTA's
  // prologue overlaps the others' loads (H200, T=32 x 256K entries: 813 us at 512 keys per CTA,
  // 1105 us at 29184).
  if (tokens * ceil_div(p.capacity, std::min<int64_t>(p.keys_per_cta, 1024)) > per_sm * sms)
    p.keys_per_cta = std::min<int64_t>(p.keys_per_cta, 512);
  p.keys_per_cta = std::min(p.keys_per_cta, range_cap);
  p.ctas_per_token = ceil_div(p.capacity, p.keys_per_cta);
}

cudaError_t indexer_fast_set_trace(unsigned long long* buffer) {
  return cudaMemcpyToSymbol(g_indexer_trace, &buffer, sizeof(buffer));
}

indexer_fast_plan indexer_topk_fast_make_plan(int64_t tokens, int64_t table_width,
                                              int64_t block_size, int sm_count) {
  indexer_fast_plan p;
  p.tokens = tokens;
  p.capacity = table_width * block_size;
  if (tokens <= 0 || p.capacity <= 0) return p;
  const int64_t sms = std::max(sm_count, 1);
  indexer_fast_plan_set_ctas_per_sm(p, 2, sm_count, block_size);
  // H200, T=1 x 256K entries: see bench_attention's collect rows.
  p.collect_keys = tokens * ceil_div(p.capacity, k_collect_keys_short) <= 8 * sms
                       ? k_collect_keys_short
                       : k_collect_keys_long;
  p.collect_ctas_per_token = ceil_div(p.capacity, p.collect_keys);
  // Select CTAs per token (H100, 256K entries, FP4 keys, same run, us, select 0 / 8 / 16 / 32
  // CTAs): T=1 top-512 43.2 / 41.8 / 40.9 / 40.2, top-1024 48.0 / 52.2 / 48.9 / 48.5; T=32
  // top-512 628.9 / 632.9 / 642.6 / 667.4, top-1024 645.5 / 662.6 / 677.3 / 712.4. So 16 CTAs for
  // a few tokens (each CTA repeats the threshold search and the list scan; only the ranking is
  // split), the single-CTA select after the collect for larger batches.
  // H200 (session 7, shares by list position): T=1 top-512 / top-1024 in all, us, select 16 / 32
  // CTAs: 35.2 / 34.4, 37.6 / 35.8; so 32 CTAs up to 4 tokens.
  p.select_ctas =
      tokens <= 8 ? int(std::clamp<int64_t>(2 * sms / tokens, 1, tokens <= 4 ? 32 : 16)) : 0;
  // One token on the score_list path: half the SMs (64 on 132), see select_ctas_wide.
  p.select_ctas_wide =
      tokens == 1 ? int(std::clamp<int64_t>(sms / 2, p.select_ctas, k_max_select_ctas)) : 0;
  // cluster_select stays off: slower (H100, session 9: T=1 top-512 39.6 vs 33.7 us in all).
  // score_list where the score grid is resident at once (two CTAs per SM: the CTAs that wait for
  // a fuller histogram snapshot never hold back a later wave) and the select is split.
  p.score_list = tokens * p.ctas_per_token <= 2 * sms && p.select_ctas > 0;
  const size_t score_bytes = size_t(tokens * score_stride_of(p.capacity)) * 4;
  p.scratch_bytes = score_bytes + size_t(tokens) * (sizeof(token_state) + 2 * k_bins * 4) +
                    size_t(tokens) * size_t(k_candidate_capacity) * 8;
  return p;
}

namespace {

// Every key format (fmt): key_scales null for bf16 keys.
template <typename act_t>
cudaError_t indexer_topk_fast_impl(const act_t* q, const act_t* weights, int64_t tokens,
                                   int64_t heads, int64_t head_dim, const void* key_pool,
                                   const void* key_scales, int fmt, int64_t pool_rows,
                                   const int32_t* block_table, int64_t table_rows,
                                   int64_t table_width, const int32_t* token_seq,
                                   const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                   float q_scale, const indexer_fast_plan& plan, void* scratch,
                                   size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  if (tokens < 0 || heads != k_heads || head_dim != k_dim || top_k <= 0 ||
      top_k > k_indexer_fast_max_top_k || block_size <= 0 || table_width < 0 || table_rows < 0 ||
      pool_rows < 0 || !q || !weights || !key_pool || (fmt != k_fmt_bf16 && !key_scales) ||
      !block_table || !token_seq || !n_visible || !out || !aligned_16(q) || !aligned_16(key_pool) ||
      !aligned_16(scratch))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (plan.tokens != tokens || plan.capacity != table_width * block_size ||
      scratch_bytes < plan.scratch_bytes || plan.ctas_per_token > INT32_MAX || tokens > 65535 ||
      (plan.capacity > 0 && (plan.collect_keys <= 0 || plan.collect_keys % k_collect_threads != 0 ||
                             plan.collect_ctas_per_token * plan.collect_keys < plan.capacity ||
                             plan.collect_ctas_per_token > INT32_MAX)) ||
      (plan.score_warps != 4 && plan.score_warps != 8) || plan.select_ctas < 0 ||
      plan.select_ctas > k_max_select_ctas || plan.select_ctas_wide < 0 ||
      plan.select_ctas_wide > k_max_select_ctas)
    return cudaErrorInvalidValue;
  // The score kernel keeps entry numbers and pool rows in 32 bits.
  if (plan.capacity > INT32_MAX || pool_rows > INT32_MAX || block_size > INT32_MAX)
    return cudaErrorInvalidValue;
  // The score CTA's block list (k_max_range_blocks) bounds its key range.
  if (plan.capacity > 0 && (plan.keys_per_cta <= 0 || plan.keys_per_cta % k_pass != 0 ||
                            ceil_div(plan.keys_per_cta, block_size) + 1 > k_max_range_blocks ||
                            plan.ctas_per_token * plan.keys_per_cta < plan.capacity))
    return cudaErrorInvalidValue;
  // Attributes per (kernel, device) (kernel_attributes.h), keyed on this instantiation's
  // score_three kernel; the lambda sets them on every kernel of the instantiation (all key
  // formats) at once.
  if (const cudaError_t e = configure_kernel_once(
          reinterpret_cast<const void*>(indexer_score_three_kernel<act_t, k_stages_fp4_three>),
          [] {
            const auto set = [](auto kernel, int smem) {
              return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          smem);
            };
            cudaError_t e = cudaSuccess;
            const auto score_kernels = {indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 4>,
                                        indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 8>};
            const auto score_kernels_fp8 = {
                indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 4>,
                indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 8>};
            const auto score_kernels_fp4 = {
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 8>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 8>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 8>};
            for (auto kernel : score_kernels)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_bf16, k_fmt_bf16));
            for (auto kernel : score_kernels_fp8)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_fp8, k_fmt_e4m3));
            for (auto kernel : score_kernels_fp4)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_fp4, k_fmt_e2m1));
            if (e == cudaSuccess)
              e = set(indexer_score_three_kernel<act_t, k_stages_fp4_three>,
                      score_three_smem_bytes(k_stages_fp4_three));
            if (e == cudaSuccess)
              e = set(indexer_score_three_kernel<act_t, k_stages_fp4_three, true>,
                      score_three_smem_bytes(k_stages_fp4_three));
            if (e == cudaSuccess)
              e = set(indexer_score_three_kernel<act_t, k_stages_fp4_three, true, true>,
                      score_three_smem_bytes(k_stages_fp4_three, true));
            if (e == cudaSuccess) e = set(indexer_collect_select_kernel, k_select_smem);
            if (e == cudaSuccess) e = set(indexer_select_kernel, k_select_kernel_smem_lean);
            if (e == cudaSuccess) e = set(indexer_cluster_select_kernel, k_csel_smem);
            // One shared-memory carveout (the largest) for the three kernels: an SM need not drain
            // to reconfigure between them.
            const auto carveout = [](auto kernel) {
              return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          int(cudaSharedmemCarveoutMaxShared));
            };
            for (auto kernel : score_kernels)
              if (e == cudaSuccess) e = carveout(kernel);
            for (auto kernel : score_kernels_fp8)
              if (e == cudaSuccess) e = carveout(kernel);
            for (auto kernel : score_kernels_fp4)
              if (e == cudaSuccess) e = carveout(kernel);
            if (e == cudaSuccess)
              e = carveout(indexer_score_three_kernel<act_t, k_stages_fp4_three>);
            if (e == cudaSuccess)
              e = carveout(indexer_score_three_kernel<act_t, k_stages_fp4_three, true>);
            if (e == cudaSuccess)
              e = carveout(indexer_score_three_kernel<act_t, k_stages_fp4_three, true, true>);
            if (e == cudaSuccess) e = carveout(indexer_collect_select_kernel);
            if (e == cudaSuccess) e = carveout(indexer_select_kernel);
            if (e == cudaSuccess) e = carveout(indexer_cluster_select_kernel);
            return e;
          });
      e != cudaSuccess)
    return e;
  const int64_t stride = score_stride_of(plan.capacity);
  unsigned char* base = static_cast<unsigned char*>(scratch);
  float* scores = reinterpret_cast<float*>(base);
  base += size_t(tokens * stride) * 4;
  token_state* state = reinterpret_cast<token_state*>(base);
  uint32_t* hist = reinterpret_cast<uint32_t*>(state + tokens);  // [tokens, k_bins]
  uint32_t* hist2 = hist + tokens * k_bins;                      // [tokens, k_bins]
  unsigned long long* cand_list = reinterpret_cast<unsigned long long*>(hist2 + tokens * k_bins);
  // No entries: no scratch, every position is -1 padding (all bits set).
  if (plan.capacity == 0) return cudaMemsetAsync(out, 0xff, size_t(tokens * top_k) * 4, stream);
  const paged_entries pages{block_table, table_rows, table_width, block_size, pool_rows, 0};
  const size_t zero_bytes = size_t(tokens) * (sizeof(token_state) + 2 * k_bins * 4);
  cudaError_t e = cudaSuccess;
  if (plan.zero_kernel) {
    static_assert((sizeof(token_state) + 2 * k_bins * 4) % 16 == 0, "16-byte words");
    const int64_t n16 = int64_t(zero_bytes / 16);
    indexer_zero_kernel<<<unsigned(std::min<int64_t>(ceil_div(n16, 256), 256)), 256, 0, stream>>>(
        reinterpret_cast<uint4*>(state), n16);
    e = cudaGetLastError();
  } else {
    e = cudaMemsetAsync(state, 0, zero_bytes, stream);
  }
  if (e != cudaSuccess) return e;
  const dim3 grid(unsigned(plan.ctas_per_token), unsigned(tokens));
  // Bulk passes: FP4 keys on wgmma, each pass inside one block, 16-byte aligned scale rows.
  const bool bulk = fmt == k_fmt_e2m1 && plan.score_wgmma && plan.score_bulk &&
                    block_size % k_pass == 0 && aligned_16(key_scales);
  const int flags =
      (bulk ? k_score_flag_bulk | (plan.score_decouple ? k_score_flag_decouple : 0) : 0) |
      (plan.score_quad ? k_score_flag_quad : 0) | (plan.score_rotate ? k_score_flag_rotate : 0) |
      (plan.score_pingpong ? k_score_flag_pingpong : 0) |
      (plan.list_once ? k_score_flag_list_once : 0);
  // A programmatic dependent of the zeroing kernel (plan.zero_kernel), else a plain launch.
  const auto launch_score = [&](auto kernel, int threads, int smem) {
    e = launch_pdl(plan.zero_kernel, kernel, grid, dim3(unsigned(threads)), size_t(smem), stream, q,
                   weights, key_pool, key_scales, pages, token_seq, n_visible, plan.capacity,
                   plan.keys_per_cta, q_scale, scores, stride, hist, flags);
  };
  const bool eight = plan.score_warps == 8;
  const bool three = bulk && plan.score_three && plan.score_decouple && plan.score_quad &&
                     !plan.score_pingpong && eight && !plan.score_split;
  // plan.score_list: the three-CTA score kernel lists the candidates itself (no collect launch);
  // the select kernel (lean, over select_ctas CTAs) resolves both threshold levels.
  const bool list_mode =
      three && plan.score_list && plan.select_ctas > 0 && plan.lean_select && !plan.cluster_select;
  if (fmt == k_fmt_e4m3) {
    const int smem = score_smem_bytes(k_stages_fp8, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 4>, 128, smem);
  } else if (three) {
    // (The token's coarse histogram of plan.score_list in its second histogram's first 256 words:
    // zeroed with it, otherwise unused on that path.)
    // plan.score_fast: the list kernel built for two CTAs per SM (the list grid has at most two
    // per SM) with its pass table, where the table holds every pass of a CTA.
    const bool fast = list_mode && plan.score_fast && plan.keys_per_cta <= k_pass_tab * k_pass;
    e = launch_pdl(plan.zero_kernel,
                   fast        ? indexer_score_three_kernel<act_t, k_stages_fp4_three, true, true>
                   : list_mode ? indexer_score_three_kernel<act_t, k_stages_fp4_three, true>
                               : indexer_score_three_kernel<act_t, k_stages_fp4_three, false>,
                   grid, dim3(256), size_t(score_three_smem_bytes(k_stages_fp4_three, fast)),
                   stream, q, weights, key_pool, key_scales, pages, token_seq, n_visible,
                   plan.capacity, plan.keys_per_cta, q_scale, scores, stride, hist, flags, state,
                   hist2, cand_list, int(top_k));
  } else if (fmt == k_fmt_e2m1 && plan.score_wgmma && plan.score_split) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 4>, 128, smem);
  } else if (fmt == k_fmt_e2m1 && plan.score_wgmma) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 4>, 128, smem);
  } else if (fmt == k_fmt_e2m1) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 4>, 128, smem);
  } else {
    const int smem = score_smem_bytes(k_stages_bf16, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 4>, 128, smem);
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess || plan.score_only) return e;
  if (list_mode) {
    // Benchmarks: collect_only stops after the scores here (the score kernel collects).
    if (plan.collect_only) return e;
    return launch_pdl(true, indexer_select_kernel,
                      dim3(unsigned(indexer_fast_list_select_ctas(plan)), unsigned(tokens)),
                      dim3(k_select_threads), size_t(k_select_kernel_smem_lean), stream,
                      static_cast<const float*>(scores), stride,
                      static_cast<const token_state*>(state), static_cast<const uint32_t*>(hist),
                      static_cast<const unsigned long long*>(cand_list), pages, token_seq,
                      n_visible, plan.capacity, int(top_k), true, true,
                      plan.list_direct ? uint32_t(k_list_direct_max) : 0u,
                      plan.list_rank ? uint32_t(k_list_rank_max) : 0u, out);
  }
  if (plan.cluster_select) {
    // Benchmarks: collect_only stops after the scores here (collect and select are one launch).
    if (plan.collect_only) return e;
    cudaLaunchAttribute attributes[2]{};
    attributes[0].id = cudaLaunchAttributeClusterDimension;
    attributes[0].val.clusterDim.x = unsigned(k_csel_ctas);
    attributes[0].val.clusterDim.y = 1;
    attributes[0].val.clusterDim.z = 1;
    attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned(k_csel_ctas), unsigned(tokens));
    config.blockDim = dim3(k_select_threads);
    config.dynamicSmemBytes = size_t(k_csel_smem);
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = plan.cluster_probe == 5 ? 1 : 2;  // probe 5: a plain (non-PDL) launch
    return cudaLaunchKernelEx(
        &config, indexer_cluster_select_kernel, static_cast<const float*>(scores), stride,
        static_cast<const uint32_t*>(hist), state, pages, token_seq, n_visible, plan.capacity,
        int(top_k), ceil_div(plan.capacity, int64_t(k_csel_ctas)), plan.cluster_probe, out);
  }
  const bool fused_select = plan.select_ctas == 0 && !plan.collect_only;
  e = launch_pdl(true, indexer_collect_select_kernel,
                 dim3(unsigned(plan.collect_ctas_per_token), unsigned(tokens)),
                 dim3(k_select_threads), size_t(k_select_smem), stream,
                 static_cast<const float*>(scores), stride, static_cast<const uint32_t*>(hist),
                 state, hist2, cand_list, pages, token_seq, n_visible, plan.capacity, int(top_k),
                 plan.collect_keys, fused_select, plan.lean_select, out);
  if (e != cudaSuccess || plan.collect_only || plan.select_ctas == 0) return e;
  return launch_pdl(true, indexer_select_kernel, dim3(unsigned(plan.select_ctas), unsigned(tokens)),
                    dim3(k_select_threads),
                    size_t(plan.lean_select ? k_select_kernel_smem_lean : k_select_kernel_smem),
                    stream, static_cast<const float*>(scores), stride,
                    static_cast<const token_state*>(state), static_cast<const uint32_t*>(hist2),
                    static_cast<const unsigned long long*>(cand_list), pages, token_seq, n_visible,
                    plan.capacity, int(top_k), plan.lean_select, false, 0u, 0u, out);
}

}  // namespace

template <typename act_t>
cudaError_t indexer_topk_fast(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                              int64_t head_dim, const __nv_bfloat16* key_pool, int64_t pool_rows,
                              const int32_t* block_table, int64_t table_rows, int64_t table_width,
                              const int32_t* token_seq, const int32_t* n_visible,
                              int64_t block_size, int64_t top_k, float q_scale,
                              const indexer_fast_plan& plan, void* scratch, size_t scratch_bytes,
                              int32_t* out, cudaStream_t stream) {
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_pool, nullptr, k_fmt_bf16,
                                pool_rows, block_table, table_rows, table_width, token_seq,
                                n_visible, block_size, top_k, q_scale, plan, scratch, scratch_bytes,
                                out, stream);
}

template <typename act_t>
cudaError_t indexer_topk_fast_fp8(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_pool,
                                  const float* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_pool, key_scales,
                                k_fmt_e4m3, pool_rows, block_table, table_rows, table_width,
                                token_seq, n_visible, block_size, top_k, q_scale, plan, scratch,
                                scratch_bytes, out, stream);
}

template <typename act_t>
cudaError_t indexer_topk_fast_fp4(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_codes,
                                  const uint32_t* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  if (key_scales && reinterpret_cast<uintptr_t>(key_scales) % 4 != 0) return cudaErrorInvalidValue;
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_codes, key_scales,
                                k_fmt_e2m1, pool_rows, block_table, table_rows, table_width,
                                token_seq, n_visible, block_size, top_k, q_scale, plan, scratch,
                                scratch_bytes, out, stream);
}

#define DSV4_INDEXER_FAST_INSTANTIATE(act_t)                                                       \
  template cudaError_t indexer_topk_fast<act_t>(                                                   \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const __nv_bfloat16*, int64_t,        \
      const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, float,   \
      const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);                            \
  template cudaError_t indexer_topk_fast_fp8<act_t>(                                               \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*,         \
      int64_t, const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, \
      float, const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);                     \
  template cudaError_t indexer_topk_fast_fp4<act_t>(                                               \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const uint8_t*, const uint32_t*,      \
      int64_t, const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, \
      float, const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);
DSV4_INDEXER_FAST_INSTANTIATE(float)
DSV4_INDEXER_FAST_INSTANTIATE(__nv_bfloat16)
#undef DSV4_INDEXER_FAST_INSTANTIATE

}  // namespace dsv4::cuda
