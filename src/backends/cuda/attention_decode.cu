// Flash-decoding sparse attention on bf16 tensor cores (mma.sync m16n8k16), head_dim 512.
//
// Grid (split, head group, token). A CTA holds its head group's 64 query rows in shared memory
// (bf16, 64 KB) and streams the token's key slots [split * keys_per_split, +keys_per_split) in
// tiles of 32 rows through a 4-stage cp.async ring (32 KB per stage). Rows are 1024 bytes; the
// 16-byte chunk c of row r is stored at chunk c ^ (r & 7), so the 8 rows an ldmatrix reads at one
// logical chunk fall in 8 distinct bank groups.
//
// 8 warps: warp w owns query rows 16 * (w & 3) .. +16 and output channels 256 * (w >> 2) .. +256.
// S = Q K^T is split the same way along the channels: each warp computes its half of the dot
// products, the two halves meet through shared memory (a + b == b + a, so both warps of a pair
// hold bit-identical scores and run the same softmax). Online softmax in f32 in base 2 (scores
// pre-multiplied by scale * log2 e); P is rounded to bf16 for P V, whose B operand is the same
// key tile read transposed (K = V). Invalid slots are zero-filled (cp.async src-size 0) and
// masked to -inf, so they add exactly 0.
//
// FP8 record pools (pool_traits<kv_fp8_record>): the ring holds the raw 584-byte records (5
// stages of 18.7 KB); each iteration first dequantizes its stage into one bf16 tile of the layout
// above (one extra barrier), then runs the same products. H200 (2026-11-22): 1.05-1.41x the bf16
// pools' time at Flash / Pro decode shapes (bench_attention --kv-fp8): the dequantization is ALU
// work serialized with the MMAs, and these shapes are not bound by the bytes they read.
// With alternate tiles (plan.alt with plan.producer, as for bf16 pools) records run the
// warp-specialized kernel instead (ATTN13 helper, session 12): its producer warpgroup copies
// each tile's records and converts them into the bf16 stage itself (dequant_codes8, the same
// values), so records take the bf16 pools' schedule and arithmetic bit for bit. Session 12's
// producer staged one tile of records in per-warp raw slots (20 KB of the exchange area); the
// records' ring alone (consumers computing nothing) took 1.5-2.9x the bf16 ring's time. ATTN15
// (session 13): the records now land in the bf16 stage itself (the codes in the half of each
// warp's rows that the conversion writes last, RoPE copied to its final place) and are converted
// in place, so the copies are issued as soon as a stage is free. Its clock() profile (H200, the
// A/B build) showed the latency guess wrong: the old producer waited on its copies for only
// 4-5% of its loop; converting took 39-47% and issuing the copies (with the next index load)
// 44-54%. In place (3 tiles ahead), converting is 17-33%; 1.06-1.11x faster (H200), but records
// still took 1.58x (HCA 1M T=8) and 1.98x (Pro HCA 1M T=32) the bf16 pools' alt time: the copy
// issue path is the wall now (bench/RESULTS.md, 2026-11-26 ATTN15). 2 tiles ahead, copies
// issued flat (verified by the lead's H200 call): 1.10-1.37x main's session-12 producer (HCA 1M
// T=8 70.4 -> 55.0 us, Pro HCA 1M T=32 402.9 -> 294.4). This version (ATTN17): each warp
// computes only its 8 rows' references (shifts for power-of-two block sizes) and copies a row's
// codes with one bulk copy (TMA) instead of 28 16-byte cp.async issued from shuffled references;
// H200: HCA 1M T=8 54.9 -> 49.9 us, Pro HCA 1M T=32 294.2 -> 250.5 (ring alone 42.0 -> 37.7
// and 224.9 -> 182.8; bf16 ring 29.7 and 117.0), Flash CSA T=32 28.1 -> 27.3, T = 1 within
// +-0.5 us (bench/RESULTS.md, 2026-11-26 ATTN17). Not the conversion's instruction count
// (ATTN14, session 12): an exact bit-placement conversion (21 instead of 31 instructions per 8
// codes) was not faster and needs a NaN / scale-range check. KVFP8B (session 26, H100, same-call
// baseline): one bf16x2 multiply per code pair (dequant_codes8_bf16, exact for every code and
// scale byte), the codes copied by the lanes that convert them (cp.async) instead of per-row
// bulk copies, the slot lookups compiled per part: HCA 1M T=32 127.9 -> 110.2 us, T=8 44.3 ->
// 40.2, Pro HCA 1M T=32 238.4 -> 207.3 (bf16 pools 97.3 / 36.5 / 168.7); ncu at HCA 1M T=32:
// ~590 instructions per tile and producer warp (849 in session 25's ncu of main's producer).
// Session 27 (lead, l27d, H200, same call, base 429c81a): the fast form (attention_decode_loads.cuh
// dequant_codes8_bf16_fast: one sign-replicating PRMT, a shift and a mask per code pair, the
// 2^120 folded into the block scale's multiply) for tiles whose scale bytes are <= 134, which
// io/kv_record.h's writer contract (NaN codes only under scale 0xff) makes exact; other tiles
// take the general form. HCA 1M T=32 100.6-101.1 -> 95.6-96.1 us, Pro HCA 1M T=32 184.3-185.0 ->
// 174.6-175.0, HCA 1M T=8 37.5 -> 36.3, Pro CSA T=32 40.7-41.0 -> 39.5-39.6; ATTN14's objection
// (no gain) no longer holds since the copies stopped being the wall.
//
// wgmma path (plan.wgmma, the default for bf16 / f32 pools): the same CTA, ring, exchange and
// softmax; the query and key tiles are stored in the wgmma SW128 layout (wg_offset) instead, and
// each warpgroup (warps 4 half ..) computes its half of S with m64n32k16 (Q and K from shared
// memory) and its 256 output channels with two m64n128k16 per 16 keys (P from registers, the key
// tile read MN-major as V). The fragments are those of the mma.sync path (one warp of a
// warpgroup = 16 rows), so softmax, exchange and epilogue are shared. H200 (2026-11-22):
// 1.02-1.18x faster than mma.sync at decode shapes (bench_attention --focus).
//
// Warp-specialized wgmma path (plan.producer, which the plan sets for bf16 pools from 4 tiles per
// split; attention_decode_ws_kernel): the same tiles and products, with a producer warpgroup that
// loads the key ring (mbarriers, setmaxnreg) and consumers that never meet in a CTA-wide
// barrier. The synchronous kernel above spent most of each tile in its two __syncthreads and in
// the loads and slot lookups of its own warps (ncu, H100, HCA 1M T=32: 857 instructions per warp
// per tile, 6.1 cycles per instruction, barrier the largest stall). Consumer schedules: in turn
// (S, softmax, P V per tile; alt off, the FP8-record kernels' order) and alternate tiles (alt).
// What the per-tile chain of this kernel measured (H200 2026-11-26, ATTN6 helper, HCA 1M T=32, 65
// tiles per CTA): ncu (clocks at base) 271 K cycles, ~4.2 K per tile against ~1 K of tensor work
// (S 2 x 16 m64n32k16 + P V 2 x 4 m64n128k16 per tile); issue slots 38% busy, 0.71 eligible warps
// per scheduler, L1/shared 61%, DRAM 26%: a latency-bound chain, not a saturated pipe. Tried,
// same run against in-turn: (a) issuing S of tile k + 1 before the rescale and P V of tile k
// (rescale beside S, softmax beside P V): 1.09-1.19x slower; (b) S in two independent wgmma
// chains (even / odd channel steps, summed; not bit-identical): 0.92x at HCA 1M T=32, 0.99-1.00x
// elsewhere, slower combined with (a) (spills); (c) tiles two at a time (plan.pairs: S of both
// in two chains, P V of both in one group, bit-equal to in-turn): 1.15-1.19x slower at HCA 1M
// T=32 / Pro T=64 while the producer published a pair's second tile only after issuing two more;
// publishing the previous pair first, 1.03-1.07x faster than in-turn but 1.11-1.15x slower than
// alt (attention_decode_plan.cpp). Removed in session 11 with plan.overlap (S of tile k + 1 issued
// before P V of tile k, its exchange and softmax beside that P V: 1.00-1.09x the in-turn time,
// H100 2026-11-24), two opt-in schedules that no plan chose.
// plan.alt (the plans' choice wherever the producer kernel runs): alternate tiles per consumer
// warpgroup. Warpgroup
// w computes the full S (512 channels, m64n32k16 with Q as the shared-memory A operand) and the
// online softmax of tiles w, w + 2, ... and hands P (bf16) and the running (max, sum) to the other
// warpgroup through shared memory (no S exchange); both run P V of every tile for their 256
// output channels, so one warpgroup's S of tile k + 1 overlaps the other's softmax of tile k.
// The softmax chain runs over the tiles in order, as in-turn; only S is summed in one f32 chain
// of 32 channel steps instead of two halves added: not bit-equal to the in-turn schedule.
// Where alt's time goes (ATTN8 helper, H100 2026-11-26, ncu source counters, HCA 1M T=32, 65
// tiles per CTA): 44% of the warp stall samples sit in mbarrier waits: the owner's wait for the
// rows of tile k + 2 32% (20.5% with the producer's test_wait, since replaced: arrive.noinc,
// below), the producer's wait for a free stage
// 8.8%; hand-off and wgmma waits 5-7% each. The kernel takes the same time on the H100 and the
// H200 (~2.1 TB/s at HCA 1M T=32), so DRAM bandwidth is not the limit; the consumers wait for the
// ring (4 stages of 32 KB, up to 3 held by the consumers under alt). Every token reading token
// 0's rows was 1-6% faster (the CTAs read the shared rows at about the same time, so this removes
// little latency). Tried, same process (bench_attention --alt-rows; branch wip/attn8 994c299 ..
// 3d03581), and dropped: leaving the partner tile's P V in flight through the next owned softmax
// 0.97-1.00x alt; also leaving the owned P V in flight 0.88-0.89x; prefetching the rows of tiles
// 2-6 ahead into L2 (prefetch.global.L2 per 128-byte line) 0.78-0.80x (its requests compete
// with the ring's cp.async).
// ATTN9 helper (2026-11-26): the S issue loop rebuilt both wgmma descriptors from the shared
// address at every one of its 32 steps (~12 uniform instructions per HGMMA, in dependent
// chains; ~45% of a consumer warp's instructions per tile). The descriptors are now advanced by
// one 32-bit add from a base (attention_wgmma::desc_at; same values): H100, same call, main /
// this (bench_attention --focus, plan rows): HCA 1M T=32 128.1 / 122.4 us, Pro HCA 1M T=32
// 224.5 / 213.1, HCA 1M T=8 50.7 / 49.8; the kernel alone (no combine) 1.03-1.07x; short steps
// unchanged. ncu (H200, main's alt kernel, HCA 1M T=32): 208.8 K cycles at 1.76 GHz, hgmma ops
// 31.2% of the tensor peak, issue slots 38.7%, DRAM 42.6%; top stalls per issue: long
// scoreboard 2.15, wait 1.18, barrier 0.89. Tried and dropped (H100, same process, bit-equal):
// the owner issuing S of its next tile right behind P V of this one and releasing the tile after
// wait<1> (the tensor pipe without the gap of wait, release, stage wait): 0.91-0.97x (Pro HCA 1M
// T=64 442.4 vs 402.7 us; ncu HCA 1M T=32 219.0 K vs 201.8 K cycles): the later release holds
// the ring.
// ATTN27 helper (H200 2026-11-27, bench_attention --steps, one process, graph replays alternating,
// bit-equal): the owner's softmax and hand-off of its next tile moved beside the partner tile's
// P V (the partner's softmax then waits on the hand-off, not on P V): 0.985-0.992x at HCA 1M
// T=8 / 16 / 32 (38.27 / 59.17 / 103.26 vs 37.98 / 58.30 / 101.79 us), 1.00x Flash CSA T=32; the
// consumers alone got slower (HCA 1M T=8 0.99 -> 1.05 us per tile, T=32 0.95 -> 1.01). With the
// lazy rescale 0.98-0.99x lazy alone (CSA T=32 1.005x). Removed. Rescaling the accumulators
// while S of the next tile runs (FA3's order, no wait before P V) made ptxas serialize every
// wgmma (C7514, reading accumulators inside the pipeline stage), not measured.
// plan.fold (the ws kernel's k_ws_fold mode), one split per (token, head group): no combine
// launch; the CTA writes the normalized rows with the sink (the combine's one-split arithmetic), on
// by default there (H100 Pro HCA 1M T=64: 402.7 -> 394.8 us, = the kernel without any combine;
// H200 428.6 -> 409.4). Tried and removed (session 11): the merge of 2-16 splits by the last CTA
// of a group (every CTA stored its partials and counted itself on a per-group device counter);
// a one-SM tail of splits x 128 KB from L2, faster than the combine at 2 splits in Pro CSA T=32
// (58.9 -> 55.7 us, H100) but slower at 2 splits in Pro HCA 1M T=32 (216.8 -> 220.5), 4 splits
// (HCA 1M T=32 126.8 -> 129.7, Flash CSA T=32 37.8 -> 39.1) and 16 (HCA 1M T=8 50.0 -> 73.0).
//
// Each CTA writes its unnormalized accumulators and (max, sum) per head; the combine kernel
// merges the splits and adds the sink to the denominator: m = max(sink, m_i),
// out = sum_i 2^(m_i - m) o_i / (sum_i 2^(m_i - m) l_i + 2^(sink - m)). A split without keys
// has m_i = -inf and is skipped, so a token without keys gets 0 / 2^0 = 0. The combine kernel is
// a programmatic dependent launch (PDL, graph-capturable): its CTAs are scheduled while the main
// grid runs and wait in griddepcontrol.wait, which hides its launch latency.
// What the combine cost and why (ATTN10 helper, H100 2026-11-26, bench_attention --combine-rows,
// same process; logs h100_2026-11-26_s11_attn10_*): at T = 32 the combine added 10-15 us to a
// 27-114 us main kernel. Two causes: (1) the block combine (one 128-thread CTA per row) takes 122
// registers for its 16-deep load window, so 4 CTAs fit an SM and 2048 rows ran in four waves of
// its latency chain: the row combine (plan.combine_rows, one warp per row, up to 8 splits; the
// same arithmetic) runs them in one (ncu, HCA 1M T=32: 16.6 -> 9.3-10.1 us); (2) the 16 MB of
// partials came back from DRAM (ncu: 16.9 MB read, L2 hit 20%): the CTAs still running stream
// their keys through L2 past the partials of those done. plan.partials_l2 stores them with L2
// evict_last and the combines read them with evict_first; then the combine costs 0-2 us (HCA 1M
// T=32: block 127.6, rows 121.2, rows + L2 115.5, no combine 114.7 us). Discarding the lines
// after the read (discard.global.L2, no write-back) measured 1-4% slower than evict_first alone
// in this benchmark (which does not time the write-back) and was dropped. Row combine at 16
// splits (512 rows, 4 warps per SM): 53.2 vs the block combine's 50.1 us, so up to 8 only.
//
// Where small steps spend their time (H200 2026-11-26, bench_attention --small, L2 flushed; split
// plans and the since-removed fused plans): launch floor 2.7 us (the same for an empty grid of
// this kernel's 384 threads and 224.6 KB of shared memory), a second PDL launch +1.5 us; the
// combine 4-5 us at T <= 8 and ~10 us at T = 32; the main kernel 16-20 us with one 32-slot tile per
// CTA, each further tile in a CTA ~2.2 us (the S -> softmax -> P V chain on the tensor cores: 4.2
// MFLOP per tile, ~32% of the dense peak per SM, as at the large shapes); graph replay within +-2
// us of eager launches. The fixed cost of a 1-tile CTA is not cold code or data: launched twice
// back to back after the L2 flush (bench_attention --twice, H200 2026-11-26), the second launch
// took 2.0-4.3 us less than the first (HCA 8K T=1: 20.1 us, then 15.8 us with code and data hot;
// the second of two empty launches: 2.2 us). Part of it was local memory (the slot source structs,
// read per slot from L2; removed, see slot_space): HCA 8K T=1 20.3 -> 16.5 us; with alternate
// tiles 16.2 us (H200, bench_attention --small). Where they go now (ATTN12 helper, H100 2026-11-26,
// bench_attention --steps: plan.trace stamps of every CTA, medians of 31 launches after the L2
// flush, us after the first CTA's entry; logs h100_2026-11-26_s12_attn12_run{1,2}_steps.txt). Flash
// CSA T=1 on 20 one-tile splits of this warp-specialized kernel, 14.1 us event-timed: set-up
// barrier 0.6, first slot indices 1.8, query tile 2.1, first tile's rows 2.4, its S 3.3 (0.8 us for
// the 32 m64n32k16 of one tile), softmax and P V 4.0, the 128 KB of partial rows stored 6.5 (2.5
// us: 8-byte stores from the fragments, ncu on the synchronous kernel: 40% of the cycles in LG
// throttle), the combine's wait returns 7.6 (the grid's end and flush), its end 10.5; the remaining
// ~3.5 us are the launch before the first entry and the event after the last exit (empty-kernel
// floor 3.1-3.4 us). The fused cluster plan (removed in session 13; attention_decode_plan.cpp has
// its figures) merged the splits over distributed shared memory instead of the combine: 8-10 us
// from the key loop's end to the CTAs' exit.
//
// Files (one translation unit: every kernel is a template in the anonymous namespace, instantiated
// by the launch code at the end of this file): attention_decode_common.cuh (geometry, pool traits,
// trace stamps, tile layouts), attention_decode_loads.cuh (a split's key space and live tiles,
// slot indices, key / record / query tiles), attention_decode_softmax.cuh (P packing, row sums),
// attention_decode_partials.cuh (L2 policies, partial row stores),
// attention_decode_sync.cuh (the synchronous kernel), attention_decode_ws_layout.cuh and
// attention_decode_ws.cuh (the warp-specialized kernel: its design and layout, then the kernel),
// attention_decode_ws_modes.h / .cpp (its schedules, modes and options, and their choice from a
// plan), attention_decode_merge.cuh (the combine's merge weights, output stores),
// attention_decode_combine.cuh (the combine kernels), attention_decode_wgmma.cuh (wgmma descriptors
// and calls); the plan heuristics in attention_decode_plan.cpp.

#include <cudaTypedefs.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>

#include "backends/cuda/attention_decode.h"
#include "backends/cuda/attention_decode_combine.cuh"
#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/attention_decode_sync.cuh"
#include "backends/cuda/attention_decode_ws.cuh"
#include "backends/cuda/attention_decode_ws_layout.cuh"
#include "backends/cuda/attention_decode_ws_modes.h"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/tensor_map.h"

namespace dsv4::cuda {

namespace {

template <typename pool_t>
bool valid_source(const kv_rows<pool_t>& s) {
  if (!s.pool || s.pool_rows < 0 || !aligned_16(s.pool)) return false;
  if (s.rows) return s.rows_width >= 0;
  return s.block_table && s.token_seq && s.n_visible && s.block_size > 0 && s.table_rows >= 0 &&
         s.table_width >= 0;
}

// A record source's layout (head_dim 512: 448 + 64 dims) is valid and its rows are 32-bit.
bool valid_record_source(const kv_rows<kv_fp8_record>& s) {
  const int64_t row_bytes = k_rec_data + k_rec_scale;
  return s.record_rows_per_block > 0 && s.record_rows_per_block <= INT32_MAX &&
         s.pool_rows <= INT32_MAX && s.record_block_bytes % 16 == 0 &&
         s.record_block_bytes >= s.record_rows_per_block * row_bytes;
}

// After the main kernel's launch on `stream`: its launch status, then the combine kernel (PDL).
// l2: the main kernel stored the partials with L2 evict_last (plan.partials_l2).
template <bool l2, typename act_t, typename part_t = float>
cudaError_t launch_combine_as(int64_t heads, int64_t tokens, const attention_decode_plan& plan,
                              const part_t* part_o, const float2* part_ml, const float* sinks,
                              act_t* out, cudaStream_t stream) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const int64_t rows = tokens * heads;
  if (rows > INT32_MAX) return cudaErrorInvalidValue;
  const int splits = int(plan.splits);
  // plan.combine_trigger: the combine triggers its dependents first thing, else at its exit.
  const int trigger = plan.combine_trigger ? 1 : 0;
  if (plan.combine_rows && splits <= k_attention_decode_max_combine_rows_splits) {
    const dim3 grid(unsigned(ceil_div(rows, k_combine_rows_warps)));
    const dim3 block(k_combine_rows_warps * k_warp_size);
    auto* const kernel = splits <= 2   ? attention_decode_combine_rows<2, act_t, l2, part_t>
                         : splits <= 4 ? attention_decode_combine_rows<4, act_t, l2, part_t>
                         : splits <= 8 ? attention_decode_combine_rows<8, act_t, l2, part_t>
                                       : attention_decode_combine_rows<16, act_t, l2, part_t>;
    return launch_pdl(true, kernel, grid, block, 0, stream, part_o, part_ml, sinks, rows,
                      int(heads), splits, out, plan.trace, trigger);
  }
  // bf16 rows (always with the L2 hints): the early loads (attention_decode_combine).
  constexpr bool early = l2 && !std::is_same_v<part_t, float>;
  return launch_pdl(true, attention_decode_combine<act_t, l2, part_t, early>, dim3(unsigned(rows)),
                    dim3(k_combine_threads), 0, stream, part_o, part_ml, sinks, int(heads), splits,
                    out, plan.trace, trigger);
}
template <typename act_t>
cudaError_t launch_combine(int64_t heads, int64_t tokens, const attention_decode_plan& plan,
                           const float* part_o, const float2* part_ml, const float* sinks,
                           act_t* out, cudaStream_t stream, bool l2 = false) {
  return l2 ? launch_combine_as<true>(heads, tokens, plan, part_o, part_ml, sinks, out, stream)
            : launch_combine_as<false>(heads, tokens, plan, part_o, part_ml, sinks, out, stream);
}

// The tensor maps of the ws kernel's TMA key tiles (ws_key_maps, attention_decode_ws_layout.cuh):
// one per bf16 pool of [pool_rows, 512] at 1024-byte rows, SWIZZLE_128B, viewed in 3-D as (64
// channels, rows, 8 column blocks) at strides (1024, 128) bytes with a box of 64 x 32 x 8: a tile
// is one copy, its column blocks outermost in shared memory (wg_offset). box2d (plan.diag 128):
// the 2-D map, box 32 rows x 64 channels, 8 copies per tile into the same bytes (the form before
// session 32). cuTensorMapEncodeTiled comes from tensor_map.h (no link to libcuda); where it or an
// encoding fails, that pool's tiles keep the cp.async path (valid bit clear).
bool encode_key_map(CUtensorMap& map, const __nv_bfloat16* pool, int64_t pool_rows,
                    bool box2d = false) {
  const auto encode = tensor_map_encoder();
  if (!encode || !pool || pool_rows <= 0 || pool_rows > INT32_MAX ||
      reinterpret_cast<uintptr_t>(pool) % 16 != 0)
    return false;
  // Encodings cached by (pool, rows): a decode step's pools are the same every layer and step.
  struct entry {
    const void* pool;
    int64_t rows;
    bool box2d;
    CUtensorMap map;
  };
  static std::mutex mu;
  static entry cache[8];
  static int next = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (const entry& e : cache)
    if (e.pool == pool && e.rows == pool_rows && e.box2d == box2d) {
      map = e.map;
      return true;
    }
  const cuuint64_t dims2[2] = {cuuint64_t(k_d), cuuint64_t(pool_rows)};
  const cuuint64_t strides2[1] = {cuuint64_t(k_row_bytes)};
  const cuuint32_t box2[2] = {64, cuuint32_t(k_tile)};
  const cuuint64_t dims3[3] = {64, cuuint64_t(pool_rows), cuuint64_t(k_d / 64)};
  const cuuint64_t strides3[2] = {cuuint64_t(k_row_bytes), 128};
  const cuuint32_t box3[3] = {64, cuuint32_t(k_tile), cuuint32_t(k_d / 64)};
  const cuuint32_t elem[3] = {1, 1, 1};
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, box2d ? 2 : 3,
             const_cast<void*>(static_cast<const void*>(pool)), box2d ? dims2 : dims3,
             box2d ? strides2 : strides3, box2d ? box2 : box3, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return false;
  cache[next] = {pool, pool_rows, box2d, map};
  next = (next + 1) % 8;
  return true;
}
// The maps for a launch: bf16 pools in the paged form with a block size that is a multiple of 32
// (the compressed part also needs a window capacity that is one: its tiles then start 32-aligned
// in it), where a tile of 32 valid slots is 32 consecutive rows of one block; explicit rows keep
// cp.async (ATTN28's first version checked every tile for a run of rows with shuffles and a vote;
// its cp.async path measured slower). None under plan.diag 16 (bench A/B: every tile by
// cp.async). L2 promotion: none / 128 / 256 bytes measured alike (ATTN28 call 2).
// None either for splits of fewer than k_attention_decode_key_tma_min_tiles (attention_decode.h)
// tiles, unless plan.diag 32 (tests,
// bench): there the TMA tiles did not pay. H200, same process, graph replays, cp.async / TMA on
// the ATTN28 kernel: HCA 8K T=1 (1 tile per split) 0.991-1.005x, T=8 (2) 0.974-0.983x, HCA 128K
// T=32 (9) 0.999-1.003x, HCA 1M T=8 (17) 1.010-1.018x, T=16 (33) 1.040-1.043x, T=32 (65)
// 1.050-1.052x (ATTN28, ATTN29 call 1); and across binaries (--focus, event-timed, ATTN29 call
// 1) the kernel before ATTN28 (= this file's no-map instances) was as fast or faster than
// ATTN28's at every HCA shape under 16 tiles per split (HCA 8K T=8 13.15-13.44 vs 13.70-13.79 us,
// HCA 128K T=1 15.68-15.87 vs 15.81-16.22, HCA 1M T=1 20.13-20.32 vs 20.16-20.54). With one 3-D
// box per tile (session 32) from 8 tiles: H200 l32d (bench_attention --steps, graph replays best
// of 3, plan.diag 32 against 16), TMA / cp.async time at HCA 128K T=32 (9 tiles per split) 24.90
// / 25.44 us (1.022x), but HCA 128K T=8 (5 tiles) 0.991x, HCA 8K T=32 / T=8 (2 tiles) 0.969x /
// 0.983x, Flash CSA T=32 (5) 0.998x.
template <typename pool_t>
ws_key_maps key_maps(const kv_rows<pool_t>& window, const kv_rows<pool_t>& comp,
                     const attention_decode_plan& plan) {
  ws_key_maps m{};
  if constexpr (std::is_same_v<pool_t, __nv_bfloat16>) {
    if ((plan.diag & 16) != 0) return m;
    if ((plan.diag & 32) == 0 &&
        plan.keys_per_split < k_attention_decode_key_tma_min_tiles * k_tile)
      return m;
    auto paged = [](const kv_rows<pool_t>& s) {
      return s.pool && !s.rows && s.block_size > 0 && s.block_size % k_tile == 0;
    };
    const bool box2d = (plan.diag & 128) != 0;
    if (paged(window) && encode_key_map(m.map[0], window.pool, window.pool_rows, box2d))
      m.valid |= 1;
    if (paged(comp) && plan.window_capacity % k_tile == 0 &&
        encode_key_map(m.map[1], comp.pool, comp.pool_rows, box2d))
      m.valid |= 2;
  }
  return m;
}

template <int mode, typename act_t, bool key_tma>
auto ws_kernel(const attention_decode_plan& plan) {
  return ws_sched_is_alt(attention_decode_ws_sched(plan))
             ? attention_decode_ws_kernel<k_ws_alt, mode, act_t, __nv_bfloat16, key_tma>
             : attention_decode_ws_kernel<k_ws_in_turn, mode, act_t, __nv_bfloat16, key_tma>;
}
// The bf16 split partials' kernel; with bf16 activations also the exact rescale of the bench
// diagnosis (plan.diag 8, attention_decode_ws_sched: main's alternate-tile arithmetic before the
// lazy rescale, for same-process A/B).
template <typename act_t, bool key_tma>
auto ws_kernel_p16(const attention_decode_plan& plan) {
  if constexpr (std::is_same_v<act_t, __nv_bfloat16>)
    if (attention_decode_ws_sched(plan) == k_ws_alt_bit)
      return attention_decode_ws_kernel<k_ws_alt_bit, k_ws_split_bf16, act_t, __nv_bfloat16,
                                        key_tma>;
  return attention_decode_ws_kernel<k_ws_alt, k_ws_split_bf16, act_t, __nv_bfloat16, key_tma>;
}

}  // namespace

template <typename act_t, typename pool_t>
cudaError_t sparse_attention_decode(const act_t* q, int64_t tokens, int64_t heads, int64_t head_dim,
                                    const kv_rows<pool_t>& window,
                                    const kv_rows<pool_t>* compressed, const float* sinks,
                                    float scale, act_t* out, const attention_decode_plan& plan,
                                    void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  const kv_rows<pool_t> none{};
  const kv_rows<pool_t>& comp = compressed ? *compressed : none;
  if (tokens < 0 || heads <= 0 || heads > INT32_MAX || head_dim != k_d || !valid_source(window) ||
      (compressed && !valid_source(*compressed)) || !q || !out || !sinks || !aligned_16(q) ||
      !aligned_16(out) || !aligned_16(scratch))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (plan.tokens != tokens || plan.heads != heads || plan.splits <= 0 ||
      plan.window_capacity != kv_rows_capacity(window) ||
      plan.comp_capacity != kv_rows_capacity(comp) || scratch_bytes < plan.scratch_bytes ||
      tokens > 65535 || plan.splits > INT32_MAX)
    return cudaErrorInvalidValue;
  // Slot numbers (window + compressed, per token) and block sizes are 32-bit in the kernel.
  if (plan.window_capacity + plan.comp_capacity + plan.keys_per_split > INT32_MAX ||
      (!window.rows && window.block_size > INT32_MAX) ||
      (compressed && !comp.rows && comp.block_size > INT32_MAX))
    return cudaErrorInvalidValue;
  if constexpr (pool_traits<pool_t>::records)
    if (!valid_record_source(window) || (compressed && !valid_record_source(comp)))
      return cudaErrorInvalidValue;
  float* part_o = static_cast<float*>(scratch);
  float2* part_ml = reinterpret_cast<float2*>(part_o + tokens * plan.splits * heads * k_d);
  const int64_t groups = ceil_div(heads, k_rows);
  const dim3 grid(unsigned(plan.splits), unsigned(groups), unsigned(tokens));
  // The warp-specialized split kernel `ws` (bf16 pools or FP8 records), then the combine unless
  // its one split folded the output (fold) or the bench skips it (plan.combine).
  const auto launch_ws_split = [&](auto* ws, bool fold, bool keep, bool p16,
                                   const auto& maps) -> cudaError_t {
    if (const cudaError_t e = allow_dynamic_smem(ws, k_ws_smem); e != cudaSuccess) return e;
    if (const cudaError_t e =
            launch_pdl(plan.pdl, ws, grid, dim3(k_ws_threads), k_ws_smem, stream, q, int(heads),
                       window, comp, int(plan.window_capacity), int(plan.comp_capacity),
                       int(plan.keys_per_split), int(plan.splits), scale * k_log2e, part_o, part_ml,
                       sinks, out, attention_decode_ws_opts(plan), plan.trace, maps);
        e != cudaSuccess)
      return e;
    if (fold || !plan.combine) return cudaGetLastError();
    if (p16)
      return launch_combine_as<true>(heads, tokens, plan,
                                     reinterpret_cast<const __nv_bfloat16*>(part_o), part_ml, sinks,
                                     out, stream);
    return launch_combine(heads, tokens, plan, part_o, part_ml, sinks, out, stream, keep);
  };
  if constexpr (std::is_same_v<pool_t, __nv_bfloat16>) {
    if (plan.wgmma && plan.producer) {
      // plan.fold with one split; more splits run the combine kernel as without it.
      const bool fold = plan.fold && plan.splits == 1;
      // plan.partials_l2: the alternate-tile split kernel keeps its partials in L2 for the
      // combine.
      // plan.partials_bf16: bf16 partials (with the L2 hints) on the same kernel and combine.
      const bool alt = ws_sched_is_alt(attention_decode_ws_sched(plan));
      const bool p16 = !fold && plan.partials_bf16 && plan.combine && alt;
      const bool keep = !fold && plan.partials_l2 && plan.combine && alt;
      const auto launch_with = [&](auto key_tma, const auto& maps) {
        constexpr bool kt = decltype(key_tma)::value;
        auto* const ws =
            fold   ? ws_kernel<k_ws_fold, act_t, kt>(plan)
            : p16  ? ws_kernel_p16<act_t, kt>(plan)
            : keep ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_keep, act_t, pool_t, kt>
                   : ws_kernel<k_ws_split, act_t, kt>(plan);
        return launch_ws_split(ws, fold, keep, p16, maps);
      };
      // The kernel instance with the maps parameter only where a part has a map (ws_key_maps_t).
      const ws_key_maps maps = key_maps(window, comp, plan);
      return maps.valid != 0 ? launch_with(std::true_type{}, maps)
                             : launch_with(std::false_type{}, ws_no_key_maps{});
    }
  }
  if constexpr (pool_traits<pool_t>::records) {
    // FP8 records on the warp-specialized kernel wherever the plan runs it with alternate tiles
    // (the producer warpgroup dequantizes), so records take the bf16 pools' schedule and
    // arithmetic; in turn (plan.alt off) they keep the synchronous kernel.
    if (plan.wgmma && plan.producer && plan.alt) {
      const bool fold = plan.fold && plan.splits == 1;
      const bool p16 = !fold && plan.partials_bf16 && plan.combine;
      const bool keep = !fold && plan.partials_l2 && plan.combine;
      auto* const ws = fold   ? attention_decode_ws_kernel<k_ws_alt, k_ws_fold, act_t, pool_t>
                       : p16  ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_bf16, act_t, pool_t>
                       : keep ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_keep, act_t, pool_t>
                              : attention_decode_ws_kernel<k_ws_alt, k_ws_split, act_t, pool_t>;
      return launch_ws_split(ws, fold, keep, p16, ws_no_key_maps{});
    }
  }
  // wgmma for bf16 / f32 pools; FP8 records in turn run the mma.sync kernel.
  const bool wg = plan.wgmma && !pool_traits<pool_t>::records;
  auto* const kernel = wg ? attention_decode_kernel<!pool_traits<pool_t>::records, act_t, pool_t>
                          : attention_decode_kernel<false, act_t, pool_t>;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem_bytes<pool_t>()); e != cudaSuccess)
    return e;
  if (const cudaError_t e = launch_pdl(
          plan.pdl, kernel, grid, dim3(k_threads), smem_bytes<pool_t>(), stream, q, int(heads),
          window, comp, int(plan.window_capacity), int(plan.comp_capacity),
          int(plan.keys_per_split), int(plan.splits), scale * k_log2e, part_o, part_ml, plan.trace);
      e != cudaSuccess)
    return e;
  if (!plan.combine) return cudaGetLastError();
  return launch_combine(heads, tokens, plan, part_o, part_ml, sinks, out, stream);
}

#define DSV4_ATTENTION_DECODE_INSTANTIATE(act_t, pool_t)                                       \
  template cudaError_t sparse_attention_decode<act_t, pool_t>(                                 \
      const act_t*, int64_t, int64_t, int64_t, const kv_rows<pool_t>&, const kv_rows<pool_t>*, \
      const float*, float, act_t*, const attention_decode_plan&, void*, size_t, cudaStream_t);
DSV4_ATTENTION_DECODE_INSTANTIATE(float, float)
DSV4_ATTENTION_DECODE_INSTANTIATE(float, __nv_bfloat16)
DSV4_ATTENTION_DECODE_INSTANTIATE(__nv_bfloat16, float)
DSV4_ATTENTION_DECODE_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
DSV4_ATTENTION_DECODE_INSTANTIATE(float, kv_fp8_record)
DSV4_ATTENTION_DECODE_INSTANTIATE(__nv_bfloat16, kv_fp8_record)
#undef DSV4_ATTENTION_DECODE_INSTANTIATE

}  // namespace dsv4::cuda
