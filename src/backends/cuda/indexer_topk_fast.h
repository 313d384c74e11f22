// Lightning indexer for decode on tensor cores: scores of bf16 (or e4m3) keys, 64 heads x 128
// dims, with mma.sync and a 12-bit histogram of the scores built on the way; a second kernel
// lists the keys at or above the threshold bin with a histogram of the next 12 bits of the bin's
// keys, and its last CTA per token resolves the 24-bit threshold and sorts only the selection.
// The semantics of ops::indexer_topk (and of indexer_topk_f32), including the tie rule (equal
// scores: lower entry first) and -1 padding.
//
// Dispatch (the lead wires it into cuda_ops):
//   plan = indexer_topk_fast_make_plan(T, table_width, block_size, sms);
//   scratch of plan.scratch_bytes (any contents; the call clears what it needs);
//   indexer_topk_fast<act_t>(q, weights, T, 64, 128, keys_bf16, pool_rows, block_table,
//                            table_rows, table_width, token_seq, n_visible, block_size, top_k,
//                            q_scale, plan, scratch, scratch_bytes, out, stream);
// The plan depends only on the token count and the table capacity (never on n_visible): the
// launches (a memset and three kernels, each a programmatic dependent of the one before; two with
// select_ctas == 0) can be graph-captured, and CTAs past a token's visible entries exit at once.
//
// Status (H200, 2026-11-22, bench_attention --indexer, graph replay, L2 flushed): 256K entries,
// T=1 top-512: bf16 keys 59.7 us, FP4 keys 46.6 us (scores 28.9 us, collect 5.5 us, select
// 12.2 us); T=32: bf16 832 us, FP4 704 us (scores 661 us, 208 TFLOP/s of mma.sync). The T=1
// scores are latency-bound, not byte-bound (ncu, FP4: issue slots 47% busy, 4 warps per
// scheduler from 119 registers x 256 threads and 78 KB of shared memory per CTA, 7.1 cycles per
// issued instruction, DRAM 12%); the select is one CTA after the collect (~12 us).
// H100, 2026-11-24 (session 6): FP4 scores on wgmma (plan.score_wgmma) 25.7 us vs 29.1 us on
// mma.sync at T=1 (576 vs 649 us at T=32), bit for bit the same scores; the select over 16 CTAs
// (indexer_select_kernel) T=1 top-512 40.9 us in all vs 43.2 us with the single-CTA select (no
// gain at top-1024 or T=32, where the plan keeps the single CTA). FP8 mma.sync (e4m3 k32) for
// FP4 q x FP4 keys was exact but slower on H100 (scores 45.1 vs 28.1 us): not kept.
// H200, 2026-11-26 (session 7, bench_attention --indexer-fp4, min of 3 interleaved rounds): FP4
// T=1 top-512 32.8 us in all (scores 21.5, collect 6.3, select 4.9; the main tree of the same
// call, d537200: 41.6 us, scores 24.6), top-1024 35.5 us (49.9), T=32 top-512 570 us (633): bulk
// passes (scores 23.5 -> 21.5 us at T=1, 622 -> 596 us at T=32), decoupled stages (T=32 596 ->
// 570 us; T=1 even), the zeroing kernel (-0.4 us at T=1), the select's shares by list position
// (T=1 top-512 select ~9-10 -> 4.9 us at 32 CTAs). score_split measured slower (T=32 583 us).
// H100, 2026-11-26 (session 9, same call, flags off / on): T=1 top-512 34.43 -> 33.44 us (scores
// 22.27 -> 21.54, collect 6.66, select 5.25), top-1024 36.48 -> 35.39, T=32 588 -> 553-570 us
// (score_quad, score_rotate, lean_select); cluster_select and score_pingpong measured slower.
// H100, 2026-11-26 (session 11, same call, off / on): score_list (the score CTAs list the
// candidates, no collect launch; the select ranks the list): T=1 x 256K top-512 34.56 -> 27.39 us,
// top-1024 36.54 -> 30.37 us; T=32 unchanged (off: two waves of score CTAs).
// H100, 2026-11-26 (session 10, same call, off / on): score_three (three score CTAs per SM where
// the grid has more than two per SM): T=32 top-512 556-562 -> 495 us (scores 513-517 -> 460), T=1
// top-512 32.8 us (scores 21.5 -> 21.3); score_ss (keys widened into shared memory, SS wgmma, two
// accumulators) measured slower (T=1 scores 22.56 vs 21.54 us, T=32 553 vs 513 us) and was removed
// (bench/kernels/results/2026-11-26_s10_idx8_NOTES.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dsv4::cuda {

constexpr int64_t k_indexer_fast_heads = 64;
constexpr int64_t k_indexer_fast_head_dim = 128;
constexpr int64_t k_indexer_fast_max_top_k = 2048;

struct indexer_fast_plan {
  int64_t tokens = 0;
  int64_t capacity = 0;      // table_width * block_size entries per token
  int64_t keys_per_cta = 0;  // multiple of 128
  int64_t ctas_per_token = 0;
  // Warps of a score CTA (4 or 8, two CTAs per SM either way; all of them issue key copies, 8
  // or 4 warps compute 16 or 32 keys of a pass each). H200, 256K entries: T=32 scores in 760 us
  // with 8 warps, 807 us with 4; T=1 33-36 us either way.
  int score_warps = 8;
  // Keys per collect CTA (a multiple of 1024; 4096 when the grid is small, else 16384) and CTAs.
  int64_t collect_keys = 0;
  int64_t collect_ctas_per_token = 0;
  // FP4 keys (indexer_topk_fast_fp4): the score MMAs as warpgroup MMAs (wgmma m64n64k16, the
  // query read from shared memory) instead of mma.sync; same widened keys and products.
  bool score_wgmma = true;
  // FP4 keys on wgmma with block_size a multiple of 128 (and 16-byte aligned scales): each pass of
  // 128 keys is one run of pool rows, fetched by one thread as two bulk copies (the TMA engine)
  // completing on an mbarrier, instead of a cp.async per row chunk by every thread.
  bool score_bulk = true;
  // FP4 keys on wgmma: a pass's 8 wgmmas in two commit groups, the second half's widening
  // overlapping the first half's MMAs (H200, session 7: T=1 even, T=32 583 vs 570 us: off).
  bool score_split = false;
  // FP4 bulk passes: stages released per thread through mbarriers (no CTA barrier per pass).
  bool score_decouple = true;
  // The score epilogue reduces both 8-row halves of a lane quad in one exchange (2 shuffles, one
  // store block; the same sums bit for bit) instead of one reduction per half. H100 (session 9,
  // same calls): T=1 x 256K scores 0.3-0.5 us faster, T=32 20-40 us (3-7%).
  bool score_quad = true;
  // Bulk passes: the copies issued by each warp in turn (lane 0 of warp p % warps at pass p)
  // rather than always by thread 0, whose warp otherwise carries ~100 more instructions per pass.
  // H100 (session 9): T=1 0.1-0.25 us faster in all; T=32 within run-to-run noise.
  bool score_rotate = true;
  // FP4 on wgmma, 8 warps: the two warpgroups take turns issuing their MMAs (named barriers), so
  // one warpgroup's MMAs overlap the other's widening and epilogue; the same scores bit for bit.
  // Opt-in: slower (H100, session 9: T=1 top-512 33.89 vs 33.44 us, T=32 591 vs 553-570 us).
  bool score_pingpong = false;
  // FP4 bulk decoupled passes on wgmma, 8 warps, quad epilogue, no pingpong
  // (indexer_score_three_kernel): the register-A path with each k-step's A fragment widened while
  // the previous k-step's wgmma runs (8 live A registers instead of 32) and the weights in shared
  // memory: 70 registers and three key stages, so three CTAs fit an SM (24 warps instead of 16)
  // wherever the grid has more than two CTAs per SM. The same scores bit for bit. H100 (session
  // 10, same call, plan's grid): T=32 x 256K scores 460 vs 513-517 us (all 495 vs 556-562 us),
  // T=1 scores 21.31 vs 21.50-21.54 us. indexer_fast_plan_set_ctas_per_sm(plan, 3, ...) gives T=1
  // a grid of three CTAs per SM: slower (22.66 us; 6 passes per CTA, 18 per SM against 16).
  bool score_three = true;
  // The per-token state and histograms zeroed by a kernel that the score kernel follows as a
  // programmatic dependent (the scores overlap the zeroing) instead of a memset node.
  bool zero_kernel = true;
  // CTAs of the select kernel per token (1..64; each ranks a share of the ~top_k keys at or above
  // the threshold), or 0: the last collect CTA of the token selects alone (the earlier scheme).
  int select_ctas = 0;
  // The select kernel's CTAs per token on the score_list path (0: select_ctas). The plan sets it
  // at T=1 (64 on 132 SMs): the ranking after F is bound by each CTA's shared-memory reads of F
  // (every warp reads all of it for its key; IDX36), so more CTAs, fewer keys each. H200 (session
  // 17, IDX20, T=1 x 256K, FP4 keys, us in all): 64 CTAs top-1024 28.26 vs 29.50 with 32, top-512
  // slower then (later entry); session 22 (lead call v22c, today's ranking, same call): top-512 per
  // call in a graph of 8 19.84-19.90 -> 19.61-19.68 us with 64 instead of 32, one call 22.66 ->
  // 22.46 (48: 19.65-19.73, but 21.23-21.30 at top-1024 against 20.79-20.88 with 64).
  int select_ctas_wide = 0;
  // Collect and select with fewer dependent global round trips (same rows): the collect CTA
  // requests its first scores with the histogram; the select kernel copies the token's block-table
  // row into shared memory before its programmatic wait (up to 8192 blocks) and requests the token
  // state, the second histogram and the list's first 1024 keys together. H100 (session 9): T=1
  // top-512 0.05-0.25 us faster (select 5.2 vs 5.4 us): the round trips were not the select's cost.
  bool lean_select = true;
  // Collect and select in one launch: a cluster of 8 CTAs per token that share the second
  // histogram and the candidate lists through distributed shared memory (no global list, no third
  // launch); collect_keys, select_ctas and lean_select are then unused. Opt-in: measured slower
  // (H100, session 9, T=1 256K entries: top-512 39.6 us in all vs 33.7 with collect + select,
  // top-1024 44.7 vs 35.2; parity with it on for up to 8 tokens). Its probes (T=1 top-512, us
  // past the scores): 0.4 at the programmatic wait, 9.2 after the scan (32K scores and list appends
  // per CTA: 8 CTAs scan what the collect spreads over 64), 14.7 after two cluster barriers, the
  // DSMEM histogram sum and the second threshold, 15.2 after gathering F, 18.1 in all.
  bool cluster_select = false;
  // FP4 keys on the three-CTA score kernel, lean select over select_ctas > 0 CTAs: each score CTA
  // lists its own keys at or above a lower bound of the threshold bin (from a snapshot of the
  // token's coarse and fine histograms after its flush) and the select kernel works from that list
  // alone (list_rank) or with the first histogram: no collect launch. The plan sets it where the
  // score grid is resident at once (one wave at two CTAs per SM: T = 1 at 256K entries on 132
  // SMs). H100 (session 11, same call, T=1 x 256K): top-512 34.56 -> 27.39 us in all (scores +
  // listing 24.70, select 2.66; without: scores 22.37, collect 6.78, select 5.41), top-1024 36.54
  // -> 30.37 us; ~570 keys listed for top-512.
  bool score_list = false;
  // score_list on the list kernel built for two CTAs per SM (indexer_score_three_kernel `fast`:
  // 122 registers, the weights in registers, a pass's 8 A fragments widened before its 8 wgmmas,
  // the next pass's copies issued from a per-CTA table while the MMAs run), where each CTA has at
  // most 64 passes; the same scores bit for bit. H200 (session 19, IDX23, same call, T=1 x 256K,
  // medians): top-512 in all 26.72 -> 25.06 us (27.39 on main before the session's loop cuts),
  // top-1024 27.3 -> 25.7. Parts measured alone (same call): the 2-CTA bound with the weights in
  // registers 26.14, + the table 25.60, + the table and the late issue 25.92, + all A fragments
  // first (session call 1) no faster than the bound alone.
  bool score_fast = true;
  // Tests: with score_list, every score CTA lists from its first snapshot (no waits for a fuller
  // one): longer lists, and overflows with top_k 2048 (the select's rescan path). Slower (H100,
  // session 11: T=1 top-512 30.40 vs 29.73 us before list_rank).
  bool list_once = false;
  // score_list, lists longer than list_rank takes: the select ranks the listed keys in or above
  // the threshold bin directly (no second histogram level) while they are <= 4096 (H100, session
  // 11, before list_rank: T=1 top-512 29.73 vs 30.82 us with the second level).
  bool list_direct = true;
  // score_list: the select ranks the whole candidate list (every key at or above the threshold is
  // in it, and a listed key ranked below top_k has every greater key listed) while it holds <= 4096
  // keys: no histogram read, no threshold search (H100, session 11: select 2.66-3.2 vs 4.8 us).
  bool list_rank = true;
  // Benchmarks: cluster_select probes (results wrong): 1 return after the programmatic wait, 2
  // after the scan (no cluster barrier), 3 after the summed histogram's threshold, 4 no ranking;
  // 5: the launch without the programmatic dependence (results right).
  int cluster_probe = 0;
  size_t scratch_bytes = 0;   // scores, per-token state and two histograms, candidate lists
  bool score_only = false;    // benchmarks: stop after the scores (out is not written)
  bool collect_only = false;  // benchmarks: skip the select (out is not written)
};

// The select kernel's CTAs per token on the score_list path.
inline int indexer_fast_list_select_ctas(const indexer_fast_plan& plan) {
  return plan.select_ctas_wide > 0 ? plan.select_ctas_wide : plan.select_ctas;
}

indexer_fast_plan indexer_topk_fast_make_plan(int64_t tokens, int64_t table_width,
                                              int64_t block_size, int sm_count);
// Benchmarks: %globaltimer stamps of token 0's score, collect and select CTAs into `buffer`
// (32776 u64: score CTA c at 8 c, collect CTA c at 8192 + 8 c, select CTA c at 16384 + 8 c, the
// zeroing kernel at 32768; slots in the kernels' trace_stamp calls,
// indexer_topk_fast_common.cuh, _score.cuh and _select.cuh), or null (the default) for none.
cudaError_t indexer_fast_set_trace(unsigned long long* buffer);
// The score grid (keys_per_cta, ctas_per_token) for `ctas_per_sm` score CTAs per SM (the plan's:
// 2; 3 for score_three). The scratch does not depend on it.
void indexer_fast_plan_set_ctas_per_sm(indexer_fast_plan& plan, int ctas_per_sm, int sm_count,
                                       int64_t block_size);

// score(t, s) = sum_h weights[t, h] * relu(q[t, h] . key[s]) * q_scale over the
// first n_visible[t] entries of block-table row token_seq[t]; out[t, 0 : top_k]
// = pool rows of the best min(top_k, n_visible[t]) entries, highest score
// first, equal scores lower entry first, -1 padded. q [tokens, 64 * 128] and
// weights [tokens, 64] in act_t (q is rounded to bf16 for the products,
// accumulation in f32), key_pool [pool_rows, 128] bf16, out [tokens, top_k]
// i32, top_k <= 2048. n_visible is clamped to [0, capacity]; an entry without a
// block (or whose row is outside the pool) scores -inf and, if selected, is
// written as -1.
template <typename act_t>
cudaError_t indexer_topk_fast(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                              int64_t head_dim, const __nv_bfloat16* key_pool, int64_t pool_rows,
                              const int32_t* block_table, int64_t table_rows, int64_t table_width,
                              const int32_t* token_seq, const int32_t* n_visible,
                              int64_t block_size, int64_t top_k, float q_scale,
                              const indexer_fast_plan& plan, void* scratch, size_t scratch_bytes,
                              int32_t* out, cudaStream_t stream);

// The same with e4m3 keys (the indexer cache format of DeepSeek-V3.2 /
// FlashMLA): key_pool [pool_rows, 128] e4m3 bytes (16-byte aligned), key_scales
// [pool_rows] f32 > 0, key row r = e4m3(key_pool[r]) * key_scales[r]. Products
// q . e4m3 are exact in f32; the scale is applied to the ReLU'd dot. Half the
// key bytes of the bf16 path; same plan and scratch.
template <typename act_t>
cudaError_t indexer_topk_fast_fp8(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_pool,
                                  const float* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream);

// The same with FP4 keys (io/indexer_fp4_key.h, the official precision mode's indexer keys
// stored exactly): key_codes [pool_rows, 64] bytes (16-byte aligned) in that header's code order,
// key_scales [pool_rows] u32 (4 E8M0 bytes, block j in byte j; each byte in 1..254). The codes are
// widened in registers to the bf16 values e2m1 * 2^(byte - 127) and fed to the bf16 path's MMAs
// in the same order, so the scores (and the selection) equal indexer_topk_fast's on a bf16 pool
// holding the decoded keys, bit for bit. 68 key bytes per entry instead of 256.
template <typename act_t>
cudaError_t indexer_topk_fast_fp4(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_codes,
                                  const uint32_t* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream);

// The FP4 key cache write: for i < count, row r = rows ? rows[i] : i (r < 0 or r >= row_limit
// skipped; row_limit ignored without a list), the 128 values at src[r * src_stride] (f32 or bf16)
// are encoded as io/indexer_fp4_key.h's indexer_fp4_key_encode into codes[r * 64 ...] and
// scales[r], byte for byte the CPU's (exact for keys hadamard_fp4 already rounded). One warp per
// row; src_stride >= 128 elements, codes 16-byte aligned, scales 4-byte aligned.
template <typename act_t>
cudaError_t indexer_fp4_pack_rows(const act_t* src, int64_t src_stride, const int32_t* rows,
                                  int64_t row_limit, int64_t count, uint8_t* codes,
                                  uint32_t* scales, cudaStream_t stream);

}  // namespace dsv4::cuda
