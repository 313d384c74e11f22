// Sparse attention for decode-sized steps on tensor cores (flash-decoding): heads of a token in
// the MMA M dimension (64 per CTA), head_dim 512, K = V (one key row in shared memory serves
// both products), the token's key slots split over CTAs, FP32 online softmax, and a combine
// kernel that adds the sink to the denominator (the semantics of ops::sparse_attention).
//
// Dispatch (the lead wires it into cuda_ops):
//   plan = attention_decode_make_plan(T, heads, head_dim, window_capacity, comp_capacity, sms);
//   scratch of plan.scratch_bytes (reused every step with the same plan);
//   sparse_attention_decode<act_t, pool_t>(q, T, heads, head_dim, window, comp_or_null, sinks,
//                                          scale, out, plan, scratch, stream);
// The plan depends only on host-known shapes (token count and slot capacities: rows_width for
// explicit rows, table_width * block_size for the paged form), never on n_visible, so a step can
// be graph-captured; the work done scales with the visible slots (CTAs past them exit early).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/attention.h"

namespace dsv4::cuda {

// Slots a source can hold per token: rows_width (explicit) or table_width * block_size (paged).
template <typename pool_t>
int64_t kv_rows_capacity(const kv_rows<pool_t>& s) {
  if (!s.pool) return 0;
  return s.rows ? s.rows_width : s.table_width * s.block_size;
}

constexpr int64_t k_attention_decode_head_dim = 512;
constexpr int64_t k_attention_decode_heads_per_cta = 64;
constexpr int64_t k_attention_decode_keys_per_tile = 32;
// plan.combine_rows: the most splits the row combine merges.
constexpr int64_t k_attention_decode_max_combine_rows_splits = 16;
// The split count the plan caps short multi-token steps at (attention_decode_plan.cpp; the row
// combine's bound until session 33).
constexpr int64_t k_attention_decode_short_step_splits = 8;
// The ws kernel's TMA key tiles: used in splits of at least this many tiles (attention_decode.cu,
// key_maps); also the split length the plan gives two (token, head group) rows of long-context
// work (attention_decode_plan.cpp).
constexpr int64_t k_attention_decode_key_tma_min_tiles = 8;

struct attention_decode_plan {
  int64_t tokens = 0;
  int64_t heads = 0;
  int64_t window_capacity = 0;  // slots of the window source per token
  int64_t comp_capacity = 0;    // slots of the compressed source per token (0: none)
  int64_t splits = 0;           // CTAs per (token, head group) along the slots
  int64_t keys_per_split = 0;   // multiple of k_attention_decode_keys_per_tile
  size_t scratch_bytes = 0;     // partial outputs + (max, sum) per (token, split, head)
  // The products on wgmma (sm_90a, attention_decode_wgmma.cuh; the default) or on mma.sync
  // (false): same tiles, split, softmax and combine. FP8 record pools run mma.sync in turn
  // and the warp-specialized wgmma kernel with alt (its producer dequantizes the records).
  bool wgmma = true;
  // With wgmma on bf16 pools: the warp-specialized kernel (a producer warpgroup loads the key
  // ring through mbarriers while 8 consumer warps compute; no CTA-wide barrier per tile). false:
  // the synchronous kernel (every warp loads and computes, two __syncthreads per tile). Same
  // tiles, split, products and softmax; f32 pools always take the synchronous kernel. The plan
  // sets it at every split (measured, attention_decode_make_plan; from 4 tiles per split only
  // before ATTN12).
  bool producer = true;
  // With producer: alternate tiles per consumer warpgroup.
  // Warpgroup w computes the full S (all 512 channels) and the online softmax of tiles
  // k = w, w + 2, ..., hands P (bf16) and the running (max, sum) to the other warpgroup through
  // shared memory, and both run P V of every tile for their 256 output channels. The f32 sums of
  // S run in one chain of 32 channel steps instead of two halves added, so the output is not the
  // in-turn schedule's bit for bit (within the CPU reference's tolerance). false: S (each
  // warpgroup its 256 channels, the halves exchanged), softmax, P V per tile in turn, the order
  // of the FP8-record and synchronous kernels (DSV4_ATTENTION_ALT=0 in the engine). On in the
  // plans with the producer (attention_decode_plan.cpp).
  bool alt = false;
  // Plans on the warp-specialized kernel (plan.producer; bf16 pools, or FP8 records with alt)
  // with one split: no combine launch; each CTA writes its normalized rows with the sink itself
  // (the combine's arithmetic with one split, so the combine's output bit for bit). More splits:
  // ignored (the combine kernel runs). The plan sets it where one split covers a (token, head
  // group).
  bool fold = false;
  // The combine kernel with one warp per (token, head) row (attention_decode_combine_rows; up to
  // k_attention_decode_max_combine_rows_splits splits) instead of one 128-thread CTA per row; the
  // same arithmetic and order, so the same output bit for bit. Set by the split plan where it
  // measured faster (attention_decode_plan.cpp).
  bool combine_rows = false;
  // Split plans on the alternate-tile kernel (plan.alt) with the combine: the partials are stored
  // with the L2 evict_last priority and the combine reads them with evict_first, so they come
  // from L2 rather than DRAM (cache hints only: the same output bit for bit). Set by the split
  // plan wherever it runs alt (attention_decode_plan.cpp).
  bool partials_l2 = false;
  // Split plans on the alternate-tile kernel (plan.alt) with the combine: the partial rows are
  // stored as bf16 (rounded to nearest; half the f32 rows' bytes written and read) with the L2
  // hints of partials_l2 whatever that says; the (max, sum) stay f32 and the combine's arithmetic
  // is the same on the widened values, so block and row combine still agree bit for bit. Not the
  // f32 partials' output bit for bit (one more bf16 rounding of each split's unnormalized row,
  // relative 2^-9: parity NMSE 3.6e-6 -> 6.0e-6 at Flash CSA T=32 with bf16 activations, under
  // the 2e-5 tolerance). The rows are stored in a layout of their own (store_split_partial_bf16:
  // 8-byte stores filling 32-byte sectors). Set by the split plan with 2-64 splits, where it
  // measured faster (attention_decode_plan.cpp).
  bool partials_bf16 = false;
  // The combine kernel triggers its programmatic dependents (the step's next kernel, which waits
  // for it) first thing instead of at its exit, so their launch overlaps the combine. Same output.
  // Set by the split plan where it measured faster (attention_decode_plan.cpp).
  bool combine_trigger = false;
  // Benchmark diagnosis only: 1 the warp-specialized kernel copies no rows (its consumers' chain
  // alone), 2 its consumers compute nothing (the ring alone), both with an undefined output; 4 the
  // FP8-record producer finds rows by 32-bit divisions even for power-of-two block sizes (the path
  // of other block sizes: the same output; bench_attention --kv-fp8's 'refs by division' row);
  // 16 (bf16 pools) no TMA key tiles: every tile by cp.async (the same output bit for bit); 32
  // TMA key tiles wherever a part has a map, also in splits shorter than the plan's threshold
  // (attention_decode.cu, key_maps; the same output bit for bit; tests and bench); 128 each TMA
  // key tile as 8 copies of 2-D boxes, the form before session 32, instead of one 3-D box (the
  // same output bit for bit).
  int diag = 0;
  // Benchmark breakdown only: false skips the combine launch (the output is then undefined).
  bool combine = true;
  // The main kernel launched as a programmatic dependent of the previous kernel on the stream
  // (PDL: its CTAs are placed and set up while that kernel finishes; they wait in
  // griddepcontrol.wait before their first global read). The kernels wait either way, so this is a
  // launch attribute only.
  bool pdl = false;
  // The caller's promise that the step's tables (token_seq, n_visible and the block tables of
  // both sources, and the window's explicit rows) were written before the stream's chain of
  // programmatic launches began (the engine's host upload of the step plan: no kernel of the step
  // writes them). With plan.pdl, the warp-specialized kernel then reads its key space and first
  // tiles' indices before griddepcontrol.wait, beside the predecessor's tail; the compressed
  // part's explicit rows (the indexer's output), q and the pools are still read after it. Set by
  // the caller (cuda_ops: kv_source::host_tables), never by the plan functions.
  bool tables_early = false;
  // Benchmark diagnosis only: %globaltimer stamps of each CTA (thread 0) at fixed points of the
  // main kernel (region 0) and the combine (region 1): word (region * 1024 + cta) * 16 + slot for
  // the first 1024 CTAs (attention_decode_trace_slot); null records nothing.
  unsigned long long* trace = nullptr;
};

// plan.trace slots (bench_attention --trace).
enum attention_decode_trace_slot : int {
  k_adt_entry = 0,   // main and combine: kernel entry
  k_adt_setup = 1,   // main: mbarriers initialized (ws) / combine: after griddepcontrol.wait
  k_adt_index = 2,   // ws producer: the first tile's row references (index chain done)
  k_adt_issued = 3,  // ws producer: every tile issued
  k_adt_landed = 4,  // ws producer: every row landed
  k_adt_query = 5,   // consumers: query tile in shared memory
  k_adt_tile0 = 6,   // consumers: first tile's rows in shared memory
  k_adt_s0 = 7,      // consumers: first tile's S complete
  k_adt_loop = 8,    // consumers: key loop done
  k_adt_end = 9,     // main and combine: thread 0 done (outputs / partials stored)
  k_adt_smid = 10,   // value: the SM
  k_adt_slots = 16,
  k_adt_max_ctas = 1024,
};

// The plan functions are host code (attention_decode_plan.cpp; tests/cuda_host checks their rules).
// sm_count: the device's SMs (one CTA per SM fits). min_tiles_per_split (>= 1) bounds how thin
// the split gets (each CTA also loads the 64 KB bf16 query tile of its head group); 0 (the
// default, what the engine runs): 1 while the step has at most 48 tiles of (token, head group)
// work, else 2, and multi-token steps take at most 8 splits where that means <= 6 tiles each.
// Beyond 64 splits the minimum doubles (fewer partial rows for the combine).
attention_decode_plan attention_decode_make_plan(int64_t tokens, int64_t heads, int64_t head_dim,
                                                 int64_t window_capacity, int64_t comp_capacity,
                                                 int sm_count, int64_t min_tiles_per_split = 0);

// Tokens per sparse_attention_decode launch when a step of `tokens` query tokens (a prefill) runs
// in chunks (cuda_ops::sparse_attention; every token is independent, and a chunk's plan is
// attention_decode_make_plan of its token count). fold_kernel: the pools run the
// warp-specialized kernel's fold mode where a plan has one split (bf16 pools; FP8 records with
// alternate tiles), which needs no scratch. Steps of <= k_attention_decode_step_chunk tokens: one
// launch. Longer steps: chunks of k_attention_decode_step_chunk where fold_kernel is false, where
// the longer chunk's plan would split (token x head-group CTAs at most half the SMs), or where
// the step has at most two waves of CTAs and the 64-token chunks already run one split; else
// chunks of up to k_attention_decode_prefill_chunk tokens on one split each (fold: no combine,
// no partials; attention_decode_plan.cpp has the measurements).
constexpr int64_t k_attention_decode_step_chunk = 64;
constexpr int64_t k_attention_decode_prefill_chunk = 8192;
int64_t attention_decode_chunk_tokens(int64_t tokens, int64_t heads, int64_t head_dim,
                                      int64_t window_capacity, int64_t comp_capacity, int sm_count,
                                      bool fold_kernel);

// out[t, h*512 : (h+1)*512] = sum_i e^(s_i - m) k_i / (sum_i e^(s_i - m) + e^(sinks[h] - m)),
// s_i = scale * q[t, h] . k_i over the window slots then the compressed slots (may be null) of
// token t; a token without keys gets 0. q, out [tokens, heads * 512] in act_t (f32 or bf16);
// pools in pool_t (bf16: cp.async straight to shared memory; f32: converted to bf16 on load;
// kv_fp8_record: FP8 records of 448 e4m3 + 64 BF16 RoPE dims, io/kv_record.h, with the layout in
// the sources' record_rows_per_block / record_block_bytes (block_bytes a multiple of 16): the
// 584 bytes of a row are copied with cp.async and dequantized in shared memory to the bf16
// values kv_record_gather<bf16> gives, so the result equals the bf16-pool kernel on the gathered
// rows bit for bit).
// Products on bf16 tensor cores (q and keys rounded to bf16, probabilities rounded to bf16 for
// P V), softmax and accumulation in f32. head_dim must be 512; window / compressed capacities
// must match the plan. Invalid indices are skipped as in sparse_attention_f32.
template <typename act_t, typename pool_t>
cudaError_t sparse_attention_decode(const act_t* q, int64_t tokens, int64_t heads, int64_t head_dim,
                                    const kv_rows<pool_t>& window,
                                    const kv_rows<pool_t>* compressed, const float* sinks,
                                    float scale, act_t* out, const attention_decode_plan& plan,
                                    void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace dsv4::cuda
