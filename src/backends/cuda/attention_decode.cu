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
// codes) was not faster and needs a NaN / scale-range check.
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
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/attention_decode.h"
#include "backends/cuda/attention_decode_wgmma.cuh"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/paged_rows.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_d = int(k_attention_decode_head_dim);
constexpr int k_rows = int(k_attention_decode_heads_per_cta);
constexpr int k_tile = int(k_attention_decode_keys_per_tile);
// Slot indices travel ahead of the key rows: at iteration k, warp 0 prefetches the indices of
// tile k + stages + index_lead (cp.async), turns those of tile k + stages (prefetched index_lead
// iterations earlier, complete: index_lead >= stages - 1 and each iteration waits for all but
// the newest stages - 2 groups) into row references, and every thread issues the rows of tile
// k + stages - 1 from the references warp 0 wrote the iteration before (pool_traits).
constexpr int k_warps = 8;
constexpr int k_threads = k_warps * k_warp_size;
constexpr int k_row_bytes = k_d * 2;
constexpr int k_chunks = k_row_bytes / 16;  // 16-byte chunks per row
constexpr int k_q_bytes = k_rows * k_row_bytes;
constexpr int k_tile_bytes = k_tile * k_row_bytes;
constexpr int k_xchg_bytes = k_warps * k_warp_size * 16 * 4;
// FP8 records (io/kv_record.h, head_dim 512): 448 e4m3 codes + 64 BF16 RoPE values (576 data
// bytes, a multiple of 16) and 8 scale bytes (7 E8M0 + pad) per row.
constexpr int k_rope = 64;
constexpr int k_nope = k_d - k_rope;
constexpr int k_rec_data = k_nope + 2 * k_rope;
constexpr int k_rec_data_chunks = k_rec_data / 16;
constexpr int k_rec_scale = 8;
constexpr int k_rec_nope_chunks = k_nope / 8;  // 8-value chunks of the bf16 tile from FP8 codes
constexpr int k_rec_stage_bytes = k_tile * (k_rec_data + k_rec_scale);
static_assert(k_nope % int(kv_record::k_quant_block) == 0 && k_rec_data % 16 == 0 &&
              (k_nope + int(kv_record::k_quant_block) - 1) / int(kv_record::k_quant_block) <=
                  k_rec_scale);

// Per pool type: what a stage of the key ring holds and how a slot's row is referenced.
// bf16 / f32 rows: a stage is the bf16 key tile itself (cp.async for bf16, converted on load for
// f32) and a reference is the row pointer. FP8 records: a stage holds the tile's raw records
// (data rows at 576-byte stride, then the 32 rows' 8 scale bytes), copied with cp.async; the
// consuming iteration dequantizes it into one bf16 key tile (`dequant_bytes`), so the MMA and
// softmax code reads the same swizzled bf16 tile in every case. A record stage is 18.7 KB
// instead of 32 KB, so records keep one more stage in flight.
template <typename pool_t>
struct pool_traits {
  static constexpr bool records = false;
  static constexpr int stages = 4;
  static constexpr int index_lead = 3;
  static constexpr int index_ring = 8;  // >= stages + index_lead (the prologue's prefetches)
  static constexpr int ptr_ring = 4;    // >= stages (the prologue converts `stages` tiles)
  static constexpr int stage_bytes = k_tile_bytes;
  static constexpr int dequant_bytes = 0;
  using ref = const pool_t*;
  __device__ static bool valid(ref r) { return r != nullptr; }
};
template <>
struct pool_traits<kv_fp8_record> {
  static constexpr bool records = true;
  static constexpr int stages = 5;
  static constexpr int index_lead = 4;
  static constexpr int index_ring = 16;
  static constexpr int ptr_ring = 8;
  static constexpr int stage_bytes = k_rec_stage_bytes;
  static constexpr int dequant_bytes = k_tile_bytes;
  struct ref {
    const uint8_t* data;    // the record's 576 data bytes, or null: no key
    const uint8_t* scales;  // its 8 scale bytes
  };
  __device__ static bool valid(ref r) { return r.data != nullptr; }
};

template <typename pool_t>
constexpr int smem_bytes() {
  using tr = pool_traits<pool_t>;
  return k_q_bytes + tr::stages * tr::stage_bytes + tr::dequant_bytes + k_xchg_bytes +
         tr::stages * k_tile * 4 + tr::index_ring * k_tile * 4 +
         tr::ptr_ring * k_tile * int(sizeof(typename tr::ref));
}
template <typename tr>
constexpr bool valid_rings() {
  return tr::index_lead >= tr::stages - 1 && tr::index_ring >= tr::stages + tr::index_lead &&
         tr::ptr_ring >= tr::stages && tr::stages >= 3;
}
static_assert(valid_rings<pool_traits<float>>() && valid_rings<pool_traits<kv_fp8_record>>());
static_assert(smem_bytes<kv_fp8_record>() <= 227 * 1024 && smem_bytes<float>() <= 227 * 1024);
constexpr float k_log2e = 1.4426950408889634f;
constexpr int k_combine_threads = k_d / 4;

static_assert(k_tile * k_chunks % k_threads == 0, "tile load must divide evenly");
static_assert(k_rows * k_chunks % k_threads == 0, "query load must divide evenly");

__device__ __forceinline__ int ceil_div_dev(int a, int b) {
  return (a + b - 1) / b;
}

// plan.trace (benchmarks): the caller's thread stamps %globaltimer (or a value) at `slot` of this
// CTA in `region` (0 main kernel, 1 combine); null records nothing.
__device__ __forceinline__ void trace_put(unsigned long long* tr, int region, int slot,
                                          unsigned long long value) {
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (cta < unsigned(k_adt_max_ctas))
    tr[(size_t(region) * k_adt_max_ctas + cta) * k_adt_slots + slot] = value;
}
__device__ __forceinline__ void trace_stamp(unsigned long long* tr, int region, int slot) {
  if (tr == nullptr) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  trace_put(tr, region, slot, now);
}
__device__ __forceinline__ void trace_smid(unsigned long long* tr) {
  if (tr == nullptr) return;
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  trace_put(tr, 0, k_adt_smid, id);
}

__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return uint32_t(row * k_row_bytes + ((chunk ^ (row & 7)) << 4));
}
// The wgmma layout of a tile of `rows` rows (attention_decode_wgmma.cuh): 64-channel column
// blocks of rows x 128 bytes, SW128 within each 8-row atom.
template <int rows>
__device__ __forceinline__ uint32_t wg_offset(int row, int chunk) {
  return uint32_t((chunk >> 3) * (rows * 128) + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}
template <bool wg, int rows>
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk) {
  if constexpr (wg)
    return wg_offset<rows>(row, chunk);
  else
    return swizzled(row, chunk);
}

template <typename pool_t>
__device__ __forceinline__ int64_t visible_slots(const kv_rows<pool_t>& s, int64_t t) {
  if (!s.pool) return 0;
  if (s.rows) return s.rows_width;
  return clamp_visible(s.n_visible[t], s.table_width * s.block_size);
}

// Where token t's slot s lives: window slots [0, cap_w), compressed slots [cap_w, cap_w + cap_c).
// Slot indices (explicit rows, or block-table entries for the paged form) are prefetched into
// shared memory with cp.async a few tiles ahead (index_src), so no thread waits on a dependent
// global load inside the key loop; row_ref turns the prefetched value into a row.
template <typename pool_t>
struct slot_space {
  kv_rows<pool_t> window, comp;
  // Slot numbers are 32-bit (the host checks the capacities) so the block division is a short
  // unsigned 32-bit sequence instead of a 64-bit division call.
  int64_t t;
  int cap_w, n_w, n_c, hi;
  int64_t seq_w, seq_c;

  __device__ __forceinline__ const int32_t* index_of(const kv_rows<pool_t>& src, int64_t seq,
                                                     int i) const {
    if (src.rows) return src.rows + t * src.rows_width + i;
    if (seq < 0 || seq >= src.table_rows) return nullptr;
    const uint32_t block = uint32_t(i) / uint32_t(src.block_size);
    if (block >= src.table_width) return nullptr;
    return src.block_table + seq * src.table_width + block;
  }
  // The global index to prefetch for slot s, or null when s holds no key.
  __device__ __forceinline__ const int32_t* index_src(int s) const {
    if (s >= hi) return nullptr;
    if (s < cap_w) return s < n_w ? index_of(window, seq_w, s) : nullptr;
    s -= cap_w;
    return s < n_c ? index_of(comp, seq_c, s) : nullptr;
  }
  // Row of slot s (index_src(s) non-null) from its prefetched index v, or no row if invalid.
  // The source's fields are selected one by one: a reference chosen at run time between
  // `window` and `comp` made both structs addressable, i.e. copied to local memory in the
  // prologue and read back per slot (232 bytes of stack; with ~230 KB of shared memory those
  // loads went to L2: ncu, HCA 8K T=1 (fused cluster plan), 44K local sectors against 23K global
  // ones).
  __device__ __forceinline__ typename pool_traits<pool_t>::ref row_ref(int s, int32_t v) const {
    const bool in_window = s < cap_w;
    const int i = in_window ? s : s - cap_w;
    const bool explicit_rows = in_window ? window.rows != nullptr : comp.rows != nullptr;
    const int64_t block_size = in_window ? window.block_size : comp.block_size;
    const int64_t pool_rows = in_window ? window.pool_rows : comp.pool_rows;
    const pool_t* pool = in_window ? window.pool : comp.pool;
    int64_t row = v;
    if (!explicit_rows) {
      if (v < 0)
        row = -1;
      else
        row = int64_t(v) * block_size + int64_t(uint32_t(i) % uint32_t(block_size));
    }
    const bool ok = row >= 0 && row < pool_rows;
    if constexpr (pool_traits<pool_t>::records) {
      if (!ok) return {nullptr, nullptr};
      // Record rows and rows_per_block fit 32 bits (the host checks): a short unsigned division.
      const uint32_t rpb =
          uint32_t(in_window ? window.record_rows_per_block : comp.record_rows_per_block);
      const int64_t block_bytes = in_window ? window.record_block_bytes : comp.record_block_bytes;
      const uint32_t block = uint32_t(row) / rpb, slot = uint32_t(row) - block * rpb;
      const uint8_t* base = reinterpret_cast<const uint8_t*>(pool) + int64_t(block) * block_bytes;
      return {base + int64_t(slot) * k_rec_data,
              base + int64_t(rpb) * k_rec_data + int64_t(slot) * k_rec_scale};
    } else {
      return ok ? pool + row * k_d : nullptr;
    }
  }
};

// Warp 0 prefetches the indices of the 32 slots from s0 into `dst` (shared address).
template <typename pool_t>
__device__ __forceinline__ void prefetch_indices(const slot_space<pool_t>& space, int s0,
                                                 uint32_t dst) {
  if (threadIdx.x < k_tile) {
    const int32_t* src = space.index_src(s0 + threadIdx.x);
    cp_async_4(dst + threadIdx.x * 4, src ? static_cast<const void*>(src) : space.window.pool,
               src != nullptr);
  }
}

// Warp 0: references of the 32 slots from s0 (none where no key) from their prefetched indices.
// Lane l converts slot l, whose index it prefetched itself (complete after its wait_group).
template <typename pool_t>
__device__ __forceinline__ void convert_slots(const slot_space<pool_t>& space, int s0,
                                              const int32_t* index,
                                              typename pool_traits<pool_t>::ref* ptrs) {
  if (threadIdx.x < k_tile) {
    const int s = s0 + int(threadIdx.x);
    ptrs[threadIdx.x] = space.index_src(s) ? space.row_ref(s, index[threadIdx.x])
                                           : typename pool_traits<pool_t>::ref{};
  }
}

// Issues the copies of the 32 rows `ptrs` points at into the stage at `dst` (shared address;
// null rows are zero-filled) and marks which slots hold a key. Thread x copies chunk x % 64 of
// rows x / 64 + 4 i.
template <bool wg, typename pool_t>
__device__ __forceinline__ void load_tile(const pool_t* const* ptrs, const void* any_global,
                                          unsigned char* dst_ptr, uint32_t dst, int* valid) {
  const int chunk = threadIdx.x % k_chunks;
#pragma unroll
  for (int i = 0; i < k_tile * k_chunks / k_threads; ++i) {
    const int r = threadIdx.x / k_chunks + (k_threads / k_chunks) * i;
    const pool_t* p = ptrs[r];
    if (chunk == 0) valid[r] = p != nullptr;
    if constexpr (sizeof(pool_t) == 2) {
      cp_async_16(dst + tile_offset<wg, k_tile>(r, chunk),
                  p ? static_cast<const void*>(p + chunk * 8) : any_global, p);
    } else {
      float4 a = make_float4(0, 0, 0, 0), b = a;
      if (p) {
        a = reinterpret_cast<const float4*>(p + chunk * 8)[0];
        b = reinterpret_cast<const float4*>(p + chunk * 8)[1];
      }
      *reinterpret_cast<uint4*>(dst_ptr + tile_offset<wg, k_tile>(r, chunk)) =
          make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                     pack_bf16x2(b.z, b.w));
    }
  }
}

// 8 bytes global -> shared (record scales); zero-filled when `valid` is false.
__device__ __forceinline__ void cp_async_8(uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}

// Records: issues the copies of the 32 records `refs` names into the raw stage at `dst` (data row
// r at r * 576, the scale bytes of row r at 32 * 576 + 8 r; missing rows zero-filled, which
// dequantize to 0) and marks which slots hold a key.
__device__ __forceinline__ void load_record_tile(const pool_traits<kv_fp8_record>::ref* refs,
                                                 const void* any_global, uint32_t dst, int* valid) {
  constexpr int n = k_tile * k_rec_data_chunks;
#pragma unroll
  for (int i = 0; i < (n + k_threads - 1) / k_threads; ++i) {
    const int x = threadIdx.x + i * k_threads;
    if (n % k_threads == 0 || x < n) {
      const int r = x / k_rec_data_chunks, c = x % k_rec_data_chunks;
      const uint8_t* p = refs[r].data;
      cp_async_16(dst + r * k_rec_data + c * 16,
                  p ? static_cast<const void*>(p + c * 16) : any_global, p != nullptr);
    }
  }
  if (threadIdx.x < k_tile) {
    const pool_traits<kv_fp8_record>::ref ref = refs[threadIdx.x];
    valid[threadIdx.x] = ref.data != nullptr;
    cp_async_8(dst + k_tile * k_rec_data + threadIdx.x * k_rec_scale,
               ref.data ? static_cast<const void*>(ref.scales) : any_global, ref.data != nullptr);
  }
}

// Records: the raw stage at `raw` -> the bf16 key tile at `tile` (swizzled as load_tile stores
// rows). Thread x writes chunk x % 64 of rows x / 64 + 4 i: chunks < 56 from 8 e4m3 codes times
// their block's power-of-two scale (e4m3 x 2^k has 4 significant bits: the f32 product and its
// bf16 rounding are exact for every scale a pack writes, and otherwise round exactly as
// kv_record_gather's bf16 output does), chunks 56.. copy the BF16 RoPE values.
// 8 e4m3 codes times their block's scale (kv_record::e8m0_value of its byte) -> 8 bf16 values
// (one 16-byte chunk of a key row). The one dequantization of record codes in this file: the
// synchronous kernel's tile and the warp-specialized kernel's producer both call it, so both
// give the same bf16 tile.
__device__ __forceinline__ uint4 dequant_codes8(uint2 codes, float s) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t word = j < 2 ? codes.x : codes.y;
    const float2 f = kv_record::e4m3x2_values(uint16_t(word >> (16 * (j & 1))));
    w[j] = pack_bf16x2(__fmul_rn(f.x, s), __fmul_rn(f.y, s));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// kv_record::e8m0_value with selects instead of branches (the same value for every byte: 0xff
// NaN, 0 -> 2^-127, else 2^(b - 127)), so the producer's loads and conversions can interleave.
__device__ __forceinline__ float e8m0_value_sel(uint32_t b) {
  return __uint_as_float(b == 0xffu ? 0x7fc00000u : b == 0u ? 0x00400000u : b << 23);
}

__device__ __forceinline__ void dequant_record_tile(const unsigned char* raw, unsigned char* tile) {
  const int chunk = threadIdx.x % k_chunks;
#pragma unroll
  for (int i = 0; i < k_tile * k_chunks / k_threads; ++i) {
    const int r = threadIdx.x / k_chunks + (k_threads / k_chunks) * i;
    const unsigned char* row = raw + r * k_rec_data;
    uint4 v;
    if (chunk < k_rec_nope_chunks) {
      v = dequant_codes8(*reinterpret_cast<const uint2*>(row + chunk * 8),
                         kv_record::e8m0_value(raw[k_tile * k_rec_data + r * k_rec_scale +
                                                   chunk * 8 / int(kv_record::k_quant_block)]));
    } else {
      v = *reinterpret_cast<const uint4*>(row + k_nope + (chunk - k_rec_nope_chunks) * 16);
    }
    *reinterpret_cast<uint4*>(tile + swizzled(r, chunk)) = v;
  }
}

__device__ __forceinline__ uint4 load8_bf16(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                    pack_bf16x2(b.z, b.w));
}

// Threads 0 .. k_threads - 1 put token t's query rows head0 .. head0 + k_rows - 1 (zeros past
// `heads`) into the shared tile at `smem` (shared address q_s) in the tile_offset<wg> layout:
// bf16 by cp.async (the caller commits and waits), f32 converted to bf16 by the threads.
template <bool wg, typename act_t>
__device__ __forceinline__ void load_query_tile(const act_t* q, int64_t t, int64_t heads,
                                                int64_t head0, unsigned char* smem, uint32_t q_s) {
  if constexpr (sizeof(act_t) == 2) {
#pragma unroll
    for (int i = 0; i < k_rows * k_chunks / k_threads; ++i) {
      const int x = threadIdx.x + i * k_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const int64_t h = head0 + r;
      cp_async_16(q_s + tile_offset<wg, k_rows>(r, c),
                  h < heads ? q + (t * heads + h) * k_d + c * 8 : q, h < heads);
    }
  } else {
#pragma unroll
    for (int i = 0; i < k_rows * k_chunks / k_threads; ++i) {
      const int x = threadIdx.x + i * k_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const int64_t h = head0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (h < heads) v = load8_bf16(q + (t * heads + h) * k_d + c * 8);
      *reinterpret_cast<uint4*>(smem + tile_offset<wg, k_rows>(r, c)) = v;
    }
  }
}

// A split CTA's result (both kernels): the thread's rows h0, h1 (accumulator n of fragment row
// e / 2 holds channel 256 half + 8 n + 2 (lane % 4) + e % 2), unnormalized, into part_o, and
// once per row (max, sum) into part_ml for the combine.
// plan.partials_l2: the split kernel stores its partial rows with the L2 evict_last priority, so
// that the keys the CTAs still running stream through L2 do not push them out before the combine
// reads them (otherwise from DRAM: ~16 MB at T = 32 with 4 splits); the combine reads them with
// evict_first, so they are not kept past that one read. Cache hints only: the same values.
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 load4_policy(const float* p, uint64_t policy) {
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void store2_policy(float* p, float a, float b, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;" ::"l"(p), "f"(a), "f"(b),
               "l"(policy)
               : "memory");
}

// plan.partials_bf16: four bf16 of a partial row (rounded to nearest) in one 8-byte store with
// the L2 policy, and widened back to f32 (exactly) from one 8-byte load with the policy (bf16
// partials always take the L2 hints; load4_cg / load4_plain: the f32 combines' loads without).
__device__ __forceinline__ void store4_bf16_policy(__nv_bfloat16* p, float a, float b, float c,
                                                   float d, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;" ::"l"(p),
               "r"(pack_bf16x2(a, b)), "r"(pack_bf16x2(c, d)), "l"(policy)
               : "memory");
}
__device__ __forceinline__ float4 widen_bf16x4(uint32_t lo, uint32_t hi) {
  return make_float4(__uint_as_float(lo << 16), __uint_as_float(lo & 0xffff0000u),
                     __uint_as_float(hi << 16), __uint_as_float(hi & 0xffff0000u));
}
// The row combine's early loads (volatile: issued where written, ahead of the (m, l) loads).
__device__ __forceinline__ uint2 load_raw4_policy(const __nv_bfloat16* p, uint64_t policy) {
  uint2 v;
  asm volatile("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ float4 load4_policy(const __nv_bfloat16* p, uint64_t policy) {
  uint32_t lo, hi;
  asm("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;"
      : "=r"(lo), "=r"(hi)
      : "l"(p), "l"(policy));
  return widen_bf16x4(lo, hi);
}
__device__ __forceinline__ float4 load4_cg(const float* p) {
  return __ldcg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ float4 load4_plain(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}

// plan.partials_bf16: store_split_partial's rows as bf16 with the evict_last policy, in a layout
// of their own: each thread stores the 4 values of accumulator column pairs n, n + 1 (channels
// c, c + 1, c + 8, c + 9 with c = 16 g + 2 j, g = n / 2, j = lane % 4) as one 8-byte store at
// position 16 g + 4 j of the row, so that a warp's store covers whole 32-byte sectors (8 rows x
// 4 lanes x 8 bytes) with half the f32 rows' store instructions. part_channel maps a position of
// 4 values back to its first channel; the combines read 4 values per load and write the channel
// pairs (c, c + 1) and (c + 8, c + 9).
__device__ __forceinline__ int part_channel(int pos) {
  return (pos & ~15) + ((pos & 15) >> 1);
}
__device__ __forceinline__ void store_split_partial_bf16(const float (&acc)[2][64],
                                                         const float (&m)[2], const float (&l)[2],
                                                         int half, int lane, int64_t h0, int64_t h1,
                                                         int heads, int64_t part,
                                                         __nv_bfloat16* part_o, float2* part_ml) {
  auto acc_at = [&](int n, int e) { return acc[n >> 4][4 * (n & 15) + e]; };
  const uint64_t policy = l2_policy_evict_last();
#pragma unroll
  for (int n = 0; n < 32; n += 2) {
    const int pos = half * 256 + (n >> 1) * 16 + 4 * (lane % 4);
    if (h0 < heads)
      store4_bf16_policy(part_o + (part + h0) * k_d + pos, acc_at(n, 0), acc_at(n, 1),
                         acc_at(n + 1, 0), acc_at(n + 1, 1), policy);
    if (h1 < heads)
      store4_bf16_policy(part_o + (part + h1) * k_d + pos, acc_at(n, 2), acc_at(n, 3),
                         acc_at(n + 1, 2), acc_at(n + 1, 3), policy);
  }
  if (half == 0 && lane % 4 == 0) {
    if (h0 < heads) part_ml[part + h0] = make_float2(m[0], l[0]);
    if (h1 < heads) part_ml[part + h1] = make_float2(m[1], l[1]);
  }
}

template <bool keep_l2 = false>
__device__ __forceinline__ void store_split_partial(const float (&acc)[2][64], const float (&m)[2],
                                                    const float (&l)[2], int half, int lane,
                                                    int64_t h0, int64_t h1, int heads, int64_t part,
                                                    float* part_o, float2* part_ml) {
  auto acc_at = [&](int n, int e) { return acc[n >> 4][4 * (n & 15) + e]; };
  if constexpr (keep_l2) {
    const uint64_t policy = l2_policy_evict_last();
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      const int c = half * 256 + n * 8 + 2 * (lane % 4);
      if (h0 < heads)
        store2_policy(part_o + (part + h0) * k_d + c, acc_at(n, 0), acc_at(n, 1), policy);
      if (h1 < heads)
        store2_policy(part_o + (part + h1) * k_d + c, acc_at(n, 2), acc_at(n, 3), policy);
    }
  } else {
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      const int c = half * 256 + n * 8 + 2 * (lane % 4);
      if (h0 < heads)
        *reinterpret_cast<float2*>(part_o + (part + h0) * k_d + c) =
            make_float2(acc_at(n, 0), acc_at(n, 1));
      if (h1 < heads)
        *reinterpret_cast<float2*>(part_o + (part + h1) * k_d + c) =
            make_float2(acc_at(n, 2), acc_at(n, 3));
    }
  }
  if (half == 0 && lane % 4 == 0) {
    if (h0 < heads) part_ml[part + h0] = make_float2(m[0], l[0]);
    if (h1 < heads) part_ml[part + h1] = make_float2(m[1], l[1]);
  }
}

template <bool wg, typename act_t, typename pool_t>
__global__ void __launch_bounds__(k_threads, 1)
    attention_decode_kernel(const act_t* q, int heads, kv_rows<pool_t> window, kv_rows<pool_t> comp,
                            int cap_w, int cap_c, int keys_per_split, int splits, float scale_log2,
                            float* part_o, float2* part_ml, unsigned long long* trace) {
  extern __shared__ __align__(1024) unsigned char smem[];  // wgmma: SW128 atoms 1024-aligned
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_entry);
  using tr = pool_traits<pool_t>;
  static_assert(!(wg && tr::records), "the wgmma path takes bf16 / f32 pools");
  namespace wgm = attention_wgmma;
  using ref_t = typename tr::ref;
  constexpr int k_stages = tr::stages;
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_q_bytes;  // the key ring: k_stages stages of tr::stage_bytes
  unsigned char* const dequant = smem + k_q_bytes + k_stages * tr::stage_bytes;  // records
  float* xchg = reinterpret_cast<float*>(dequant + tr::dequant_bytes);
  int* valid = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(xchg) + k_xchg_bytes);
  int32_t* index = valid + k_stages * k_tile;                               // [index_ring][k_tile]
  ref_t* ptrs = reinterpret_cast<ref_t*>(index + tr::index_ring * k_tile);  // [ptr_ring][k_tile]

  // The combine kernel is launched as a programmatic dependent (pdl.cuh): let it start (and wait
  // in pdl_wait for this grid's completion and memory) on the SMs this grid leaves free.
  pdl_trigger();
  // plan.pdl: this grid may start before the previous kernel has finished; nothing global is read
  // before its completion.
  pdl_wait();
  const int split = blockIdx.x;
  const int group = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int rg = warp & 3;     // query rows 16 rg ..
  const int half = warp >> 2;  // channels 256 half ..

  slot_space<pool_t> space{.window = window,
                           .comp = comp,
                           .t = t,
                           .cap_w = cap_w,
                           .n_w = 0,
                           .n_c = 0,
                           .hi = 0,
                           .seq_w = -1,
                           .seq_c = -1};
  if (!window.rows) space.seq_w = window.token_seq[t];
  if (comp.pool && !comp.rows) space.seq_c = comp.token_seq[t];
  space.n_w = int(min(visible_slots(window, t), int64_t(cap_w)));
  space.n_c = int(min(visible_slots(comp, t), int64_t(cap_c)));
  const int lo = split * keys_per_split;
  const int hi = min(lo + keys_per_split, cap_w + cap_c);
  space.hi = hi;

  // Live tiles (those holding a visible slot): a run over the window part, then one over the
  // compressed part, merged where a tile straddles both.
  int len1 = 0, j2a = 0, len2 = 0;
  if (space.n_w > lo) len1 = ceil_div_dev(min(space.n_w, hi) - lo, k_tile);
  {
    const int c_lo = max(cap_w, lo), c_hi = min(cap_w + space.n_c, hi);
    if (c_hi > c_lo) {
      j2a = max((c_lo - lo) / k_tile, len1);
      len2 = max(ceil_div_dev(c_hi - lo, k_tile) - j2a, 0);
    }
  }
  const int n_live = len1 + len2;
  auto tile_start = [&](int k) { return lo + k_tile * (k < len1 ? k : j2a + (k - len1)); };

  const int64_t head0 = int64_t(group) * k_rows;
  const int64_t part = (t * splits + split) * heads;
  if (n_live == 0) {
    if (threadIdx.x < k_rows && head0 + threadIdx.x < heads)
      part_ml[part + head0 + threadIdx.x] = make_float2(-INFINITY, 0.0f);
    return;
  }
  if (threadIdx.x == 0) trace_smid(trace);

  // Prologue: the indices of tiles 0 .. k_stages + index_lead - 1 and the query rows (rows past
  // `heads` are zero and never written out); references of tiles 0 .. k_stages - 1; the rows of
  // tiles 0 .. k_stages - 2.
  const uint32_t index_s = smem_u32(index);
  auto prefetch = [&](int j) {
    if (j < n_live)
      prefetch_indices(space, tile_start(j), index_s + uint32_t(j % tr::index_ring) * k_tile * 4);
  };
  auto convert = [&](int j) {
    if (j < n_live)
      convert_slots(space, tile_start(j), index + (j % tr::index_ring) * k_tile,
                    ptrs + (j % tr::ptr_ring) * k_tile);
  };
  const void* any_global = q;
  auto issue = [&](int j) {
    const int st = int(j % k_stages);
    if (j >= n_live) return;
    if constexpr (tr::records)
      load_record_tile(ptrs + (j % tr::ptr_ring) * k_tile, any_global, k_s + st * tr::stage_bytes,
                       valid + st * k_tile);
    else
      load_tile<wg>(ptrs + (j % tr::ptr_ring) * k_tile, any_global,
                    smem + k_q_bytes + st * k_tile_bytes, k_s + st * k_tile_bytes,
                    valid + st * k_tile);
  };
  // Prologue loops stay rolled: unrolled, the inlined slot lookups made the prologue ~64 KB of
  // straight-line SASS, fetched cold into the instruction cache on every launch.
#pragma unroll 1
  for (int j = 0; j < k_stages + tr::index_lead; ++j) prefetch(j);
  load_query_tile<wg>(q, t, heads, head0, smem, q_s);
  cp_async_commit();
  cp_async_wait<0>();
  if constexpr (wg) wgm::fence_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_query);
#pragma unroll 1
  for (int j = 0; j < k_stages; ++j) convert(j);
  __syncthreads();
#pragma unroll 1
  for (int j = 0; j < k_stages - 1; ++j) {
    issue(j);
    cp_async_commit();
  }

  // Output channels 256 half + 8 n + 2 (lane % 4) + (e & 1), rows lane / 4 + 8 (e >> 1): the
  // mma.sync C fragments acc[n][e], stored as the wgmma m64n128 accumulators of the two
  // 128-channel halves: acc_at(n, e) = acc[n / 16][4 (n % 16) + e].
  float acc[2][64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.0f;
  auto acc_at = [&](int n, int e) -> float& { return acc[n >> 4][4 * (n & 15) + e]; };
  auto acc_frag = [&](int n) -> float(&)[4] {
    return *reinterpret_cast<float(*)[4]>(&acc[n >> 4][4 * (n & 15)]);
  };
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

#pragma unroll 1
  for (int k = 0; k < n_live; ++k) {
    cp_async_wait<k_stages - 2>();
    if constexpr (wg) wgm::fence_async_smem();
    __syncthreads();  // tile k landed for every thread; tile k - 1 is consumed
    if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_tile0);
    // (The group of iteration k - index_lead, which prefetched tile k + k_stages's indices, is
    // complete: at most k_stages - 2 newer groups are pending.)
    if (warp == 0) {
      prefetch(k + k_stages + tr::index_lead);
      convert(k + k_stages);
    }
    issue(k + k_stages - 1);
    cp_async_commit();
    const int stage = int(k % k_stages);
    const int* vt = valid + stage * k_tile;
    uint32_t kb;  // the bf16 key tile
    if constexpr (tr::records) {
      // The dequantized tile of iteration k - 1 is consumed (the barrier above).
      dequant_record_tile(smem + k_q_bytes + stage * tr::stage_bytes, dequant);
      __syncthreads();
      kb = smem_u32(dequant);
    } else {
      kb = k_s + stage * k_tile_bytes;
    }

    // Half of S = Q K^T: rows 16 rg.., 32 keys, channels 256 half ..
    float s[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if constexpr (wg) {
      // Warpgroup `half` (warps 4 half ..): its 256 channels in 16 k16 steps; step kk is in
      // column block 4 half + kk / 4 at byte 32 (kk % 4) of each 128-byte row.
      float sd[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) sd[i] = 0.0f;
      wgm::fence();
#pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        const uint32_t block = uint32_t(half * 4 + kk / 4), byte = uint32_t(kk % 4) * 32;
        wgm::mma_ss_n32(sd, wgm::desc(q_s + block * (k_rows * 128) + byte, 16, 1024),
                        wgm::desc(kb + block * (k_tile * 128) + byte, 16, 1024));
      }
      wgm::commit();
      wgm::wait_all();
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        wgm::reg_fence(sd[i]);
        s[i / 4][i % 4] = sd[i];
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        const int c0 = half * 32 + kk * 2;
        uint32_t a[4];
        ldmatrix_x4(a, q_s + swizzled(rg * 16 + (lane % 8) + ((lane / 8) & 1) * 8, c0 + lane / 16));
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b,
                      kb + swizzled(np * 16 + (lane / 16) * 8 + lane % 8, c0 + ((lane / 8) & 1)));
          mma_bf16_16816(s[2 * np], a, b[0], b[1]);
          mma_bf16_16816(s[2 * np + 1], a, b[2], b[3]);
        }
      }
    }
    float* mine = xchg + (warp * k_warp_size + lane) * 16;
    const float* other = xchg + ((warp ^ 4) * k_warp_size + lane) * 16;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      reinterpret_cast<float4*>(mine)[j] = make_float4(s[j][0], s[j][1], s[j][2], s[j][3]);
    __syncthreads();
    if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_s0);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float4 o = reinterpret_cast<const float4*>(other)[j];
      s[j][0] += o.x;
      s[j][1] += o.y;
      s[j][2] += o.z;
      s[j][3] += o.w;
    }

    // Online softmax over rows lane / 4 (e = 0, 1) and lane / 4 + 8 (e = 2, 3).
    float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j * 8 + 2 * (lane % 4) + (e & 1);
        s[j][e] = vt[key] ? s[j][e] * scale_log2 : -INFINITY;
        tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
      }
    float corr[2], m_use[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 1));
      tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 2));
      const float m_new = fmaxf(m[i], tmax[i]);
      m_use[i] = m_new == -INFINITY ? 0.0f : m_new;  // no -inf - -inf
      corr[i] = exp2f(m[i] - m_use[i]);
      m[i] = m_new;
      l[i] *= corr[i];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - m_use[e >> 1]);
        l[e >> 1] += s[j][e];
      }
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      acc_at(n, 0) *= corr[0];
      acc_at(n, 1) *= corr[0];
      acc_at(n, 2) *= corr[1];
      acc_at(n, 3) *= corr[1];
    }

    // O += P V over the 32 keys (two k16 steps), channels 256 half ..
    uint32_t pas[2][4];
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      pas[ks][0] = pack_bf16x2(s[2 * ks][0], s[2 * ks][1]);
      pas[ks][1] = pack_bf16x2(s[2 * ks][2], s[2 * ks][3]);
      pas[ks][2] = pack_bf16x2(s[2 * ks + 1][0], s[2 * ks + 1][1]);
      pas[ks][3] = pack_bf16x2(s[2 * ks + 1][2], s[2 * ks + 1][3]);
    }
    if constexpr (wg) wgm::fence();  // acc rescaled and P written by this thread
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const uint32_t(&pa)[4] = pas[ks];
      if constexpr (wg) {
        // V = the key tile read MN-major: keys 16 ks .. at byte 128 * 16 ks of the column
        // blocks 4 half + 2 nh, + 1 (LBO: the next 64 channels; SBO: the next 8 keys).
#pragma unroll
        for (int nh = 0; nh < 2; ++nh)
          wgm::mma_rs_n128_mn(
              acc[nh], pa,
              wgm::desc(kb + uint32_t(half * 4 + nh * 2) * (k_tile * 128) + uint32_t(ks) * 16 * 128,
                        k_tile * 128, 1024));
      } else {
        const int key = ks * 16 + (lane % 8) + ((lane / 8) & 1) * 8;
#pragma unroll
        for (int np = 0; np < 16; ++np) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, kb + swizzled(key, half * 32 + np * 2 + lane / 16));
          mma_bf16_16816(acc_frag(2 * np), pa, b[0], b[1]);
          mma_bf16_16816(acc_frag(2 * np + 1), pa, b[2], b[3]);
        }
      }
    }
    if constexpr (wg) {
      wgm::commit();
      wgm::wait_all();
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        wgm::reg_fence(acc[0][i]);
        wgm::reg_fence(acc[1][i]);
      }
    }
  }
  cp_async_wait<0>();
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_loop);

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  const int64_t h0 = head0 + rg * 16 + lane / 4, h1 = h0 + 8;
  store_split_partial(acc, m, l, half, lane, h0, h1, heads, part, part_o, part_ml);
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_end);
}

// ---- Warp-specialized wgmma kernel (plan.producer, bf16 pools) ----
// The same tiles, products, exchange, softmax and partial outputs as attention_decode_kernel<wg>,
// with the loads moved to a producer warpgroup (warps 8..11): it turns slot indices into row
// pointers (indices register-prefetched 3 tiles ahead), issues each tile's 32 rows with cp.async
// into a 4-stage ring and publishes a stage on its `full` mbarrier as the rows land (each
// thread's cp.async.mbarrier.arrive.noinc: the hardware arrives for the thread once its copies
// are complete, so the producer never waits for its own rows, only for free stages; 128 such
// arrivals + one release arrival for the validity mask); the 8 consumer warps wait on `full`,
// fence the async proxy, compute, and release the stage on its `empty` mbarrier (one arrival per
// warp). ATTN11 helper (H100 2026-11-26, bench_attention --alt-rows, same process): the
// producer used to publish tile j - 3 after cp.async.wait_group while issuing tile j (and, under
// alt, the issued tiles but the newest before blocking on a stage, plan.publish_early), so it
// waited for its rows in order and issued the next tile late; arrive.noinc: HCA 1M T=32 120.1 ->
// 101.8 us, Pro HCA 1M T=64 404.4 -> 344.4, HCA 1M T=8 45.4 -> 41.0, Flash CSA T=32 27.3 ->
// 26.6, bit-identical outputs (main's / this binary, same call, plan rows of --cases: 139.1 ->
// 117.2, 371.0 -> 338.2). Tried and dropped there: the rows of tile j + 1 or j + 2 brought into
// L2 by the TMA unit (cp.async.bulk.prefetch.L2, one per 1 KB row) while issuing tile j,
// 0.59-0.75x at the HCA 1M shapes, 0.93x at Flash CSA T=32 (with arrive.noinc 0.73-0.86x).
// Where the time goes after it (same helper, H100, --alt-rows with plan.diag, second round):
// alt / consumers alone (no row copies) / ring alone (no products): HCA 1M T=32 102.9 / 78.9 /
// 95.7 us, Pro HCA 1M T=64 333.0 / 256.8 / 199.2, HCA 1M T=8 41.3 / 33.5 / 35.2, Flash CSA T=32
// 26.4 / 22.3 / 21.7: neither bound alone, the consumers' chain the larger. wgmma issue rates
// (bench_attention --wgmma-rates, one CTA per SM, two warpgroups sharing the pipe; cycles per
// wgmma of the SM): S's SS m64n32k16 24 (shared-memory bound: A 2 KB + B 1 KB at 128 B per
// cycle, 67% of the tensor peak), SS m64n64k16 32 (100%), RS m64n32k16 18.5 (87%), P V's RS
// m64n128k16 64 (100%): a tile costs >= 32 x 24 + 8 x 64 = 1280 pipe cycles, and the consumers
// alone take ~1.8-2.0 K (Pro HCA 1M T=64: 0.99 us per tile). S on m64n64k16 over tile pairs (the
// ring in a paired layout: column blocks of 64 rows, two adjacent stages one B operand) measured
// in the in-turn schedule (bit-equal to it): 1.02-1.11x in-turn but 0.74-0.76x alt (HCA 1M T=32
// 139.1 vs 102.9 us, Pro HCA 1M T=64 440.1 vs 333.0); dropped. Under alt it cannot fit: the
// owner of pair p + 2 issues its S while pairs p (the partner's P V) and p + 1 are held, 6 stages
// of 32 KB beside the 64 KB query tile.
// The consumers never meet in a CTA-wide barrier inside the loop: the two warps of a row group
// (w, w + 4) meet on a named barrier of 64 threads for the score exchange, double-buffered by
// tile parity (the partner reads tile k's half before it arrives at tile k + 1's barrier, which
// the writer of tile k + 2 has passed). Per tile a 32-bit validity mask replaces the per-slot
// flags, and the accumulator rescale is skipped when no row maximum of the warp changed
// (multiplying by 1 is the identity, so the result is the same bit for bit).
constexpr int k_ws_stages = 4;
constexpr int k_ws_consumers = k_warps;  // warps 0..7 compute, warps 8..11 load
constexpr int k_ws_producers = 4;        // one warpgroup (setmaxnreg works per warpgroup)
constexpr int k_ws_threads = (k_ws_consumers + k_ws_producers) * k_warp_size;
// Registers: 384 threads give 168 each at entry; the producers drop to 56 (40 spilled), the
// consumers take 224 (as the synchronous kernel: 128 accumulators of 256 output channels per
// thread, no spill); 128 x 56 + 256 x 224 <= 64 K.
constexpr int k_ws_producer_regs = 56;
constexpr int k_ws_consumer_regs = 224;
static_assert(128 * k_ws_producer_regs + 256 * k_ws_consumer_regs <= 65536);
constexpr int k_ws_rows_per_producer = k_tile / k_ws_producers;
constexpr int k_ws_ring = k_q_bytes;  // offsets in shared memory
constexpr int k_ws_xchg = k_ws_ring + k_ws_stages * k_tile_bytes;
constexpr int k_ws_masks = k_ws_xchg + 2 * k_xchg_bytes;
constexpr int k_ws_bars = k_ws_masks + k_ws_stages * 4;   // full[stages], empty[stages]
constexpr int k_ws_ml = k_ws_bars + 2 * k_ws_stages * 8;  // spare 512 B (was the fused (m, l))
constexpr int k_ws_smem = k_ws_ml + k_rows * 8;
// FP8 records: the spare area holds the barriers of the codes' bulk copies (stage, producer warp).
constexpr int k_ws_raw_bars = k_ws_ml;
static_assert(k_ws_stages * 4 * 8 <= k_rows * 8);
static_assert(k_ws_smem <= 227 * 1024 && k_ws_bars % 8 == 0);

// One row's merge weights in the combine kernel's arithmetic (the row combine's, so that it stays
// bit for bit the block combine's):
// M = max(m_r, sink2) over the n <= lanes splits' (m, l) in v (log2 domain), row_w[r] =
// 2^(m_r - M), and row_w[lanes] = 1 / D, D = sum_r l_r w_r + 2^(sink2 - M) summed as lane 0 of
// the combine's shuffle-xor butterfly sums lanes 0..lanes-1 (lanes >= n hold 0; the butterfly
// levels above lanes / 2 and the other warps add exactly 0, so any lanes >= n gives the same D).
template <int lanes>
__device__ __forceinline__ void merge_row_weights(const float2 (&v)[lanes], int n, float sink2,
                                                  float* row_w) {
  static_assert(lanes >= 1 && lanes <= 16 && (lanes & (lanes - 1)) == 0);
  float mx = -INFINITY;
#pragma unroll
  for (int r = 0; r < lanes; ++r)
    if (r < n) mx = fmaxf(mx, v[r].x);
  mx = fmaxf(mx, sink2);
  float x[lanes];
#pragma unroll
  for (int r = 0; r < lanes; ++r) {
    x[r] = 0.0f;
    if (r < n) {
      const float w = v[r].x == -INFINITY ? 0.0f : exp2f(v[r].x - mx);
      x[r] = w == 0.0f ? 0.0f : __fmul_rn(v[r].y, w);
      row_w[r] = w;
    }
  }
  // The levels spelled out (a halving loop was left rolled: x went to the stack).
  if constexpr (lanes >= 16) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = __fadd_rn(x[j], x[j + 8]);
  }
  if constexpr (lanes >= 8) {
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = __fadd_rn(x[j], x[j + 4]);
  }
  if constexpr (lanes >= 4) {
#pragma unroll
    for (int j = 0; j < 2; ++j) x[j] = __fadd_rn(x[j], x[j + 2]);
  }
  if constexpr (lanes >= 2) x[0] = __fadd_rn(x[0], x[1]);
  row_w[lanes] = 1.0f / __fadd_rn(x[0], exp2f(sink2 - mx));
}

__device__ __forceinline__ void store4(float* p, float4 v) {
  *reinterpret_cast<float4*>(p) = v;
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16x2(v.x, v.y), pack_bf16x2(v.z, v.w));
}
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<uint32_t*>(p) = pack_bf16x2(a, b);
}

// Consumer schedules of the warp-specialized kernel: in turn, alternate tiles (plan.alt).
constexpr int k_ws_in_turn = 0;
constexpr int k_ws_alt = 1;
// Kernel modes: split (partials for the combine kernel), split with plan.fold, one split only (a
// template mode, so that the split kernel's code is not touched by it). (Mode 1 was the fused
// cluster kernel, removed in session 13; the numbers are kept.)
constexpr int k_ws_split = 0;
constexpr int k_ws_fold = 2;
// plan.partials_l2 (split, alternate tiles): the partials stored with L2 evict_last.
constexpr int k_ws_split_keep = 3;
// plan.partials_bf16 (split, alternate tiles): the partials stored as bf16 with L2 evict_last.
constexpr int k_ws_split_bf16 = 4;
// Run-time options of the ws kernel (`opts`), bench diagnoses (plan.diag): no row copies (the
// consumers' chain alone) / no products (the ring alone).
constexpr int k_ws_opt_no_load = 1;
constexpr int k_ws_opt_no_compute = 2;
// FP8 records (plan.diag 4): references by 32-bit divisions even for power-of-two block sizes.
constexpr int k_ws_opt_divisions = 4;

// pool_t: bf16 rows, or FP8 records (kv_fp8_record: alternate tiles, split / fold modes).
template <int sched, int mode, typename act_t, typename pool_t = __nv_bfloat16>
__global__ void __launch_bounds__(k_ws_threads, 1)
    attention_decode_ws_kernel(const act_t* q, int heads, kv_rows<pool_t> window,
                               kv_rows<pool_t> comp, int cap_w, int cap_c, int keys_per_split,
                               int splits, float scale_log2, float* part_o, float2* part_ml,
                               const float* sinks, act_t* out, int opts,
                               unsigned long long* trace) {
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_entry);
  constexpr bool fold = mode == k_ws_fold;
  constexpr bool keep_l2 = mode == k_ws_split_keep;
  constexpr bool part_bf16 = mode == k_ws_split_bf16;
  constexpr bool records = pool_traits<pool_t>::records;
  static_assert(std::is_same_v<pool_t, __nv_bfloat16> || records);
  // Records stage their raw rows in the exchange area's part that only alt leaves free.
  static_assert(!records || sched == k_ws_alt);
  namespace wgm = attention_wgmma;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_ws_ring;
  float* const xchg_base = reinterpret_cast<float*>(smem + k_ws_xchg);
  uint32_t* const masks = reinterpret_cast<uint32_t*>(smem + k_ws_masks);
  const uint32_t full_bar = q_s + k_ws_bars, empty_bar = full_bar + 8 * k_ws_stages;

  pdl_trigger();  // the combine kernel may start (it waits for this grid in pdl_wait)
  pdl_wait();     // plan.pdl: the previous kernel's outputs (q, indices) are complete
  const int split = blockIdx.x;
  const int group = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;

  slot_space<pool_t> space{.window = window,
                           .comp = comp,
                           .t = t,
                           .cap_w = cap_w,
                           .n_w = 0,
                           .n_c = 0,
                           .hi = 0,
                           .seq_w = -1,
                           .seq_c = -1};
  if (!window.rows) space.seq_w = window.token_seq[t];
  if (comp.pool && !comp.rows) space.seq_c = comp.token_seq[t];
  space.n_w = int(min(visible_slots(window, t), int64_t(cap_w)));
  space.n_c = int(min(visible_slots(comp, t), int64_t(cap_c)));
  const int lo = split * keys_per_split;
  const int hi = min(lo + keys_per_split, cap_w + cap_c);
  space.hi = hi;
  // Live tiles: as attention_decode_kernel.
  int len1 = 0, j2a = 0, len2 = 0;
  if (space.n_w > lo) len1 = ceil_div_dev(min(space.n_w, hi) - lo, k_tile);
  {
    const int c_lo = max(cap_w, lo), c_hi = min(cap_w + space.n_c, hi);
    if (c_hi > c_lo) {
      j2a = max((c_lo - lo) / k_tile, len1);
      len2 = max(ceil_div_dev(c_hi - lo, k_tile) - j2a, 0);
    }
  }
  const int n_live = len1 + len2;
  auto tile_start = [&](int k) { return lo + k_tile * (k < len1 ? k : j2a + (k - len1)); };

  const int64_t head0 = int64_t(group) * k_rows;
  const int64_t part = (t * splits + split) * heads;
  // (fold: a CTA without keys still writes its rows, 0.)
  if (n_live == 0 && !fold) {  // uniform over the CTA: before any barrier
    if (threadIdx.x < k_rows && head0 + threadIdx.x < heads)
      part_ml[part + head0 + threadIdx.x] = make_float2(-INFINITY, 0.0f);
    return;
  }
  if (threadIdx.x == 0) {
    for (int i = 0; i < k_ws_stages; ++i) {
      // The producers' 128 cp.async arrivals and one release arrival (the mask).
      mbar::init(full_bar + 8 * i, k_ws_producers * k_warp_size + 1);
      mbar::init(empty_bar + 8 * i, k_ws_consumers);
    }
    if constexpr (records) {
      // Records: one barrier per (stage, producer warp) on which the warp's bulk copies complete.
      for (int i = 0; i < k_ws_stages * k_ws_producers; ++i)
        mbar::init(q_s + k_ws_raw_bars + 8 * i, 1);
      mbar::fence_init();
    }
  }
  __syncthreads();  // the only CTA-wide barrier: the mbarriers are initialized
  if (threadIdx.x == 0) {
    trace_stamp(trace, 0, k_adt_setup);
    trace_smid(trace);
  }

  // Producer warp pw (warps 8..11). Lane l of every producer warp handles slot l of each tile:
  // its index (loaded 3 tiles ahead) and row pointer; the warp then copies rows
  // 8 pw .. 8 pw + 7 of the tile, each lane 2 of the 64 16-byte chunks of a row.
  auto produce = [&] {
    const int pw = warp - k_ws_consumers;
    const void* any_global = q;
    auto index_of_tile = [&](int j) -> int32_t {
      if (j >= n_live) return -1;
      const int32_t* src = space.index_src(tile_start(j) + lane);
      return src ? __ldg(src) : -1;  // -1: row_ref gives no row
    };
    int32_t v0 = index_of_tile(0), v1 = index_of_tile(1), v2 = index_of_tile(2);
    const bool no_load = (opts & k_ws_opt_no_load) != 0;
    if constexpr (records) {
      using ref_t = typename pool_traits<pool_t>::ref;
      // FP8 records land in the bf16 stage of their tile and are converted there in place
      // (dequant_codes8: the synchronous kernel's values) before the tile is published. Warp pw
      // owns rows 8 pw .. 8 pw + 7, i.e. the 1 KB chunk at b * 4096 + 1024 pw of every
      // 64-channel column block b of the stage (wg_offset): only this warp touches its chunks.
      // Copies: lane rr < 8 copies row rr's 448 code bytes with one bulk copy (the TMA engine,
      // completing on the warp's barrier of the stage) to chunk 3 + rr / 2 at 448 (rr % 2), and
      // its 8 scale bytes (cp.async) to chunk 6 at 896 + 8 rr; every lane copies two 16-byte
      // chunks of RoPE (bf16) of row l / 4 straight to their swizzled place in chunk 7 (cp.async:
      // missing rows zero-filled there and in the scales; their codes are taken as zeros). Was
      // 36 16-byte copies per row, each with its reference by shuffle: ATTN15's profile had the
      // references and the copy issue at 35-75% of the producer's loop. Conversion: lane l
      // converts codes 16 (l % 4) .. + 15 of row l / 4 in each code block; chunks 0..2 hold no
      // raw bytes, so blocks 0..2 are written at once, blocks 3..6 after every lane has read its
      // row (__syncwarp).
      // Depth: tile j + 1 is in flight while tile j is converted; tile j + 2 is issued after
      // tile j is published, into tile j - 2's stage (the consumers release tile k once tile
      // k + 1 is full, so the wait cannot block on an unpublished tile).
      constexpr int blk = k_tile * 128;                   // a column block of the tile
      constexpr int wblk = k_ws_rows_per_producer * 128;  // a warp's rows of a block
      constexpr int codes_blocks = k_nope / int(kv_record::k_quant_block);
      constexpr int scale_off = 6 * blk + 2 * k_nope;  // the 8 rows' scale bytes (chunk 6)
      static_assert(codes_blocks == 7 && int(kv_record::k_quant_block) == 64 && k_rope * 2 == 128 &&
                    k_ws_rows_per_producer == 8 && 2 * k_nope + 8 * k_rec_scale <= wblk &&
                    k_nope % 16 == 0);
      const int wbase = pw * wblk;
      // Lane l holds the index and reference of warp row l % 8.
      const int rr_i = lane & 7;
      const int slot_i = pw * k_ws_rows_per_producer + rr_i;
      // Power-of-two block sizes (the engine's: rows_per_block = the cache's block size): the
      // references by shifts (row_ref's 32-bit divisions otherwise).
      auto log2_or = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0 ? __ffsll(x) - 1 : -1; };
      const int w_bs = window.rows ? 0 : log2_or(window.block_size);
      const int c_bs = comp.rows || !comp.pool ? 0 : log2_or(comp.block_size);
      const int w_rpb = log2_or(window.record_rows_per_block);
      const int c_rpb = comp.pool ? log2_or(comp.record_rows_per_block) : 0;
      const bool pow2 =
          w_bs >= 0 && c_bs >= 0 && w_rpb >= 0 && c_rpb >= 0 && (opts & k_ws_opt_divisions) == 0;
      const uint32_t raw_bar = q_s + k_ws_raw_bars + 8 * pw;  // + 8 * 4 * stage
      uint8_t* const mask_bytes = reinterpret_cast<uint8_t*>(masks);
      // Lane l: row crr = l / 4 of the warp, output chunks 2 (l % 4), + 1 of each block.
      const int crr = lane >> 2, cq = lane & 3;
      const int orow = (pw * k_ws_rows_per_producer + crr) * 128;
      const int out0 = orow + (((2 * cq) ^ crr) << 4);
      const int out1 = orow + (((2 * cq + 1) ^ crr) << 4);
      auto convert_tile = [&](unsigned char* st, bool ok) {
        unsigned char* const w = st + wbase;
        const unsigned char* const raw = w + (3 + (crr >> 1)) * blk + (crr & 1) * k_nope + cq * 16;
        const uint2 sc = *reinterpret_cast<const uint2*>(w + scale_off + crr * k_rec_scale);
        auto get = [&](int b) {
          const uint4 c = *reinterpret_cast<const uint4*>(raw + b * 64);
          return ok ? c : make_uint4(0, 0, 0, 0);
        };
        auto put = [&](int b, uint4 c) {
          const float s = e8m0_value_sel(((b < 4 ? sc.x : sc.y) >> (8 * (b & 3))) & 0xffu);
          *reinterpret_cast<uint4*>(st + b * blk + out0) = dequant_codes8(make_uint2(c.x, c.y), s);
          *reinterpret_cast<uint4*>(st + b * blk + out1) = dequant_codes8(make_uint2(c.z, c.w), s);
        };
        put(0, get(0));
        put(1, get(1));
        put(2, get(2));
        const uint4 a3 = get(3), a4 = get(4), a5 = get(5), a6 = get(6);
        __syncwarp();  // every lane has read its row's codes and scales (chunks 3..6)
        put(3, a3);
        put(4, a4);
        put(5, a5);
        put(6, a6);
      };
      // Depth 2 (H200, ATTN15 call 1): a third tile in flight left the ring alone as fast and
      // the whole kernel slower (the producer then waits for tile j - 1's release, which needs
      // the consumers' P V of it, instead of tile j - 2's).
      constexpr int lead = 2;
      static_assert(lead <= k_ws_stages - 1);
      // The loop, compiled once for power-of-two block sizes and once for any.
      auto run = [&](auto pow2_c) {
        constexpr bool shifts = decltype(pow2_c)::value;
        auto index_of_row = [&](int j) -> int32_t {
          if (j >= n_live) return -1;
          int s = tile_start(j) + slot_i;
          const int32_t* src = nullptr;
          if constexpr (!shifts) {
            src = space.index_src(s);
          } else if (s < hi) {  // space.index_src with shifts
            const bool in_window = s < cap_w;
            if (!in_window) s -= cap_w;
            // (Fields selected one by one: a reference to either struct puts both in local
            // memory, as row_ref notes.)
            const int64_t seq = in_window ? space.seq_w : space.seq_c;
            const int32_t* const rows = in_window ? window.rows : comp.rows;
            if (s < (in_window ? space.n_w : space.n_c)) {
              if (rows) {
                src = rows + t * (in_window ? window.rows_width : comp.rows_width) + s;
              } else if (seq >= 0 && seq < (in_window ? window.table_rows : comp.table_rows)) {
                const int64_t width = in_window ? window.table_width : comp.table_width;
                const uint32_t block = uint32_t(s) >> (in_window ? w_bs : c_bs);
                if (block < width)
                  src = (in_window ? window.block_table : comp.block_table) + seq * width + block;
              }
            }
          }
          return src ? __ldg(src) : -1;  // -1: no row
        };
        auto ref_of_row = [&](int j, int32_t v) -> ref_t {
          if (j >= n_live) return ref_t{};
          const int s = tile_start(j) + slot_i;
          if constexpr (!shifts) {
            return space.row_ref(s, v);
          } else {
            const bool in_window = s < cap_w;
            const uint32_t i = uint32_t(in_window ? s : s - cap_w);
            const bool explicit_rows = in_window ? window.rows != nullptr : comp.rows != nullptr;
            const int bs = in_window ? w_bs : c_bs, rpb = in_window ? w_rpb : c_rpb;
            const int64_t pool_rows = in_window ? window.pool_rows : comp.pool_rows;
            const int64_t block_bytes =
                in_window ? window.record_block_bytes : comp.record_block_bytes;
            const uint8_t* pool =
                reinterpret_cast<const uint8_t*>(in_window ? window.pool : comp.pool);
            int64_t row = v;
            if (!explicit_rows && v >= 0) row = (int64_t(v) << bs) + (i & ((1u << bs) - 1u));
            if (row < 0 || row >= pool_rows) return ref_t{};
            const uint32_t block = uint32_t(row) >> rpb, slot = uint32_t(row) & ((1u << rpb) - 1u);
            const uint8_t* base = pool + int64_t(block) * block_bytes;
            return {base + int64_t(slot) * k_rec_data,
                    base + (int64_t(k_rec_data) << rpb) + int64_t(slot) * k_rec_scale};
          }
        };
        // Tile into stage sn: this warp's byte of the tile's mask, then its copies.
        auto issue_tile = [&](const ref_t& p, int sn) {
          const uint32_t st = k_s + uint32_t(sn * k_tile_bytes);
          const uint32_t bar = raw_bar + uint32_t(8 * k_ws_producers * sn);
          const bool ok = p.data != nullptr;
          const uint32_t valid8 = __ballot_sync(0xffffffffu, ok) & 0xffu;
          if (lane == 0) {
            mask_bytes[4 * sn + pw] = uint8_t(valid8);
            mbar::arrive_expect_tx(bar, no_load ? 0u : uint32_t(__popc(valid8) * k_nope));
          }
          if (!no_load) {
            const uint8_t* const d = reinterpret_cast<const uint8_t*>(
                __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p.data), crr));
            cp_async_16(st + uint32_t(7 * blk + out0),
                        d ? static_cast<const void*>(d + k_nope + 32 * cq) : any_global, d);
            cp_async_16(st + uint32_t(7 * blk + out1),
                        d ? static_cast<const void*>(d + k_nope + 32 * cq + 16) : any_global, d);
            if (lane < k_ws_rows_per_producer) {
              cp_async_8(st + uint32_t(scale_off + wbase + lane * k_rec_scale),
                         ok ? static_cast<const void*>(p.scales) : any_global, ok);
              if (ok)
                mbar::bulk_g2s(st + uint32_t((3 + (lane >> 1)) * blk + wbase + (lane & 1) * k_nope),
                               p.data, k_nope, bar);
            }
          }
          cp_async_commit();
        };
        int32_t u0 = index_of_row(0), u1 = index_of_row(1), u2 = index_of_row(2),
                u3 = index_of_row(3);
#pragma unroll
        for (int j = 0; j < lead; ++j) {
          if (j < n_live)
            issue_tile(ref_of_row(j, j == 0 ? u0 : u1), j);
          else
            cp_async_commit();  // an empty group keeps the count
        }
#pragma unroll 1
        for (int j = 0; j < n_live; ++j) {
          const int stage = j % k_ws_stages;
          cp_async_wait<lead - 1>();  // tile j's scales and RoPE (later groups may be pending)
          __syncwarp();               // every lane's copies are visible to the warp
          mbar::wait(raw_bar + uint32_t(8 * k_ws_producers * stage),
                     uint32_t(j / k_ws_stages) & 1u);  // tile j's codes
          if (!no_load)
            convert_tile(smem + k_ws_ring + stage * k_tile_bytes,
                         (mask_bytes[4 * stage + pw] >> crr) & 1u);
          // Written by the generic proxy (and the copies), read by the consumers' wgmmas.
          wgm::fence_async_smem();
          mbar::arrive(full_bar + 8 * stage);
          if (pw == 0 && lane == 0) {
            mbar::arrive(full_bar + 8 * stage);  // masks[stage] was written at its issue
            if (j == 0) trace_stamp(trace, 0, k_adt_index);
          }
          const int jn = j + lead;
          if (jn < n_live) {
            const ref_t p = ref_of_row(jn, u2);
            const int sn = jn % k_ws_stages;
            // Stage reuse: the consumers released tile jn - stages.
            if (jn >= k_ws_stages)
              mbar::wait(empty_bar + 8 * sn, uint32_t(jn / k_ws_stages - 1) & 1u);
            issue_tile(p, sn);
          } else {
            cp_async_commit();  // an empty group keeps the count
          }
          u2 = u3;
          u3 = index_of_row(j + lead + 2);
        }
      };
      if (pow2)
        run(std::true_type{});
      else
        run(std::false_type{});
    } else {
#pragma unroll 1
      for (int j = 0; j < n_live; ++j) {
        const int32_t v = v0;
        v0 = v1;
        v1 = v2;
        v2 = index_of_tile(j + 3);
        const pool_t* p = space.row_ref(tile_start(j) + lane, v);
        const int stage = j % k_ws_stages;
        // Stage reuse: the consumers released tile j - stages (phase j / stages - 1 of `empty`).
        if (j >= k_ws_stages) mbar::wait(empty_bar + 8 * stage, uint32_t(j / k_ws_stages - 1) & 1u);
        const uint32_t mask = __ballot_sync(0xffffffffu, p != nullptr);
        if (!no_load) {
          const uint32_t dst = k_s + uint32_t(stage) * k_tile_bytes;
#pragma unroll
          for (int i = 0; i < k_ws_rows_per_producer; ++i) {
            const int r = pw * k_ws_rows_per_producer + i;
            const pool_t* pr = reinterpret_cast<const pool_t*>(
                __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p), r));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int c = lane + k_warp_size * h;
              cp_async_16(dst + wg_offset<k_tile>(r, c),
                          pr ? static_cast<const void*>(pr + c * 8) : any_global, pr != nullptr);
            }
          }
        }
        // Published as the rows land: the hardware makes this thread's arrival once its copies
        // are complete. Lane 0 of warp 0 also arrives after writing the mask (release).
        mbar::cp_async_arrive_noinc(full_bar + 8 * stage);
        if (pw == 0 && lane == 0) {
          masks[stage] = mask;
          mbar::arrive(full_bar + 8 * stage);
          if (j == 0) trace_stamp(trace, 0, k_adt_index);
        }
      }
    }
    if (pw == 0 && lane == 0) trace_stamp(trace, 0, k_adt_issued);
    cp_async_wait<0>();
    if (pw == 0 && lane == 0) trace_stamp(trace, 0, k_adt_landed);
  };

  // plan.fold (split kernel, launched with one split only; no combine launch): the CTA writes
  // its normalized rows in the combine's arithmetic with one split, so the output equals the
  // combine's bit for bit:
  //   M = max(m, sink), w = 2^(m - M) (0 without keys), D = l w + 2^(sink - M),
  //   out = fma(w, acc, 0) * (1 / D).
  // A token without keys gets 0 / 2^0 = 0, as the combine gives. sink2: the rows' sinks (log2).
  auto fold_write = [&](float(&acc)[2][64], const float(&m)[2], const float(&l)[2],
                        const float(&sink2)[2], int half, int64_t h0, int64_t h1) {
    auto acc_at = [&](int n, int e) -> float& { return acc[n >> 4][4 * (n & 15) + e]; };
    float w1[2], inv1[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float mx = fmaxf(m[i], sink2[i]);
      w1[i] = m[i] == -INFINITY ? 0.0f : exp2f(m[i] - mx);
      const float x = w1[i] == 0.0f ? 0.0f : __fmul_rn(l[i], w1[i]);
      inv1[i] = 1.0f / __fadd_rn(x, exp2f(sink2[i] - mx));
    }
    auto one = [&](float a, float wv, float iv) {
      return __fmul_rn(wv == 0.0f ? 0.0f : __fmaf_rn(wv, a, 0.0f), iv);
    };
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      const int c = half * 256 + n * 8 + 2 * (lane % 4);
      if (h0 < heads)
        store2(out + (t * heads + h0) * k_d + c, one(acc_at(n, 0), w1[0], inv1[0]),
               one(acc_at(n, 1), w1[0], inv1[0]));
      if (h1 < heads)
        store2(out + (t * heads + h1) * k_d + c, one(acc_at(n, 2), w1[1], inv1[1]),
               one(acc_at(n, 3), w1[1], inv1[1]));
    }
  };
  // The sinks are read after the key loop: two more registers live across the loop changed its
  // code (and time: H200, Pro HCA 1M T=64). (Folding this into fold_write changes the register
  // allocation of the fold kernels; kept apart, their SASS is that of main db1a561.)
  auto fold_epilogue = [&](float(&acc)[2][64], const float(&m)[2], const float(&l)[2], int half,
                           int64_t h0, int64_t h1) {
    float sink1[2] = {0.0f, 0.0f};
    if (h0 < heads) sink1[0] = sinks[h0] * k_log2e;
    if (h1 < heads) sink1[1] = sinks[h1] * k_log2e;
    fold_write(acc, m, l, sink1, half, h0, h1);
  };

  // Consumers: warp w owns query rows 16 rg .. and output channels 256 half .. (as
  // attention_decode_kernel<wg>).
  auto consume = [&] {
    const int rg = warp & 3;
    const int half = warp >> 2;
    const int64_t h0 = head0 + rg * 16 + lane / 4, h1 = h0 + 8;
    if (n_live > 0) {  // always in the split kernel; a fold CTA without keys needs no query
      load_query_tile<true>(q, t, heads, head0, smem, q_s);
      if constexpr (sizeof(act_t) == 2) {
        cp_async_commit();
        cp_async_wait<0>();
      }
      wgm::fence_async_smem();
      mbar::named_sync(1, k_threads);  // the query tile is complete (consumers only)
      if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_query);
    }

    float acc[2][64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.0f;
    auto acc_at = [&](int n, int e) -> float& { return acc[n >> 4][4 * (n & 15) + e]; };
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    // Tile k's stage (shared address) once its rows have landed; its validity mask.
    auto wait_full = [&](int k, uint32_t& mask) -> uint32_t {
      const int stage = k % k_ws_stages;
      mbar::wait(full_bar + 8 * stage, uint32_t(k / k_ws_stages) & 1u);
      // The rows were written by cp.async (generic proxy) and the wgmmas read them through the
      // async proxy.
      wgm::fence_async_smem();
      mask = masks[stage];
      return k_s + uint32_t(stage) * k_tile_bytes;
    };
    // This warp is done with tile k's stage (its S and P V products have completed).
    auto release = [&](int k) {
      __syncwarp();
      if (lane == 0) mbar::arrive(empty_bar + 8 * (k % k_ws_stages));
    };
    // Issues (commits, does not wait for) this warpgroup's half of S = Q K^T of the tile at kb:
    // rows 16 rg.., 32 keys, channels 256 half .. in 16 k16 steps.
    auto issue_scores = [&](float(&sd)[16], uint32_t kb) {
#pragma unroll
      for (int i = 0; i < 16; ++i) sd[i] = 0.0f;
      wgm::fence();
      const uint64_t a0 = wgm::desc(q_s, 16, 1024), b0 = wgm::desc(kb, 16, 1024);
#pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        const uint32_t block = uint32_t(half * 4 + kk / 4), byte = uint32_t(kk % 4) * 32;
        wgm::mma_ss_n32(sd, wgm::desc_at(a0, block * (k_rows * 128) + byte),
                        wgm::desc_at(b0, block * (k_tile * 128) + byte));
      }
      wgm::commit();
    };
    // S of the tile at kb, waited for (every wgmma group of this warpgroup retired).
    auto scores_now = [&](float(&sd)[16], uint32_t kb) {
      issue_scores(sd, kb);
      wgm::wait<0>();
#pragma unroll
      for (int i = 0; i < 16; ++i) wgm::reg_fence(sd[i]);
    };
    // Tile k's completed half scores sd -> the full scores (exchange with warp w ^ 4), online
    // softmax: the probabilities s (f32) and the factor corr the accumulators must be scaled by.
    // The exchange buffer `buf` (0, 1): this warp writes its half scores, and after the pair's
    // barrier adds warp w ^ 4's half to its own (a + b == b + a: both warps get the same sums).
    auto exchange_write = [&](int buf, const float(&sd)[16]) {
      float* const mine = xchg_base + buf * (k_xchg_bytes / 4) + (warp * k_warp_size + lane) * 16;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        reinterpret_cast<float4*>(mine)[j] =
            make_float4(sd[4 * j], sd[4 * j + 1], sd[4 * j + 2], sd[4 * j + 3]);
    };
    auto exchange_read = [&](int buf, const float(&sd)[16], float(&s)[4][4]) {
      const float* const other =
          xchg_base + buf * (k_xchg_bytes / 4) + ((warp ^ 4) * k_warp_size + lane) * 16;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float4 o = reinterpret_cast<const float4*>(other)[j];
        s[j][0] = sd[4 * j] + o.x;
        s[j][1] = sd[4 * j + 1] + o.y;
        s[j][2] = sd[4 * j + 2] + o.z;
        s[j][3] = sd[4 * j + 3] + o.w;
      }
    };
    // Online softmax of one tile's full scores s (in place: the probabilities, f32) and the factor
    // corr the accumulators must be scaled by.
    auto softmax_local = [&](uint32_t mask, float(&s)[4][4], float(&corr)[2]) {
      // Rows lane / 4 (e = 0, 1) and lane / 4 + 8 (e = 2, 3).
      const bool all_valid = mask == 0xffffffffu;
      float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = j * 8 + 2 * (lane % 4) + (e & 1);
          s[j][e] = all_valid || ((mask >> key) & 1u) ? s[j][e] * scale_log2 : -INFINITY;
          tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
        }
      float m_use[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 1));
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 2));
        const float m_new = fmaxf(m[i], tmax[i]);
        m_use[i] = m_new == -INFINITY ? 0.0f : m_new;  // no -inf - -inf
        corr[i] = exp2f(m[i] - m_use[i]);
        m[i] = m_new;
        l[i] *= corr[i];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] = exp2f(s[j][e] - m_use[e >> 1]);
          l[e >> 1] += s[j][e];
        }
    };
    auto softmax = [&](int k, const float(&sd)[16], uint32_t mask, float(&s)[4][4],
                       float(&corr)[2]) {
      exchange_write(k & 1, sd);
      mbar::named_sync(2 + rg, 2 * k_warp_size);
      exchange_read(k & 1, sd, s);
      softmax_local(mask, s, corr);
    };
    // P rounded to bf16 as the A fragments of the two k16 steps. Written only once no P V is in
    // flight: a wgmma reads its register operands asynchronously.
    auto pack = [&](const float(&s)[4][4], uint32_t(&pas)[2][4]) {
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        pas[ks][0] = pack_bf16x2(s[2 * ks][0], s[2 * ks][1]);
        pas[ks][1] = pack_bf16x2(s[2 * ks][2], s[2 * ks][3]);
        pas[ks][2] = pack_bf16x2(s[2 * ks + 1][0], s[2 * ks + 1][1]);
        pas[ks][3] = pack_bf16x2(s[2 * ks + 1][2], s[2 * ks + 1][3]);
      }
    };
    // acc *= corr, skipped when no row maximum of the warp changed (x * 1 == x).
    auto rescale = [&](const float(&corr)[2]) {
      if (__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) {
#pragma unroll
        for (int n = 0; n < 32; ++n) {
          acc_at(n, 0) *= corr[0];
          acc_at(n, 1) *= corr[0];
          acc_at(n, 2) *= corr[1];
          acc_at(n, 3) *= corr[1];
        }
      }
    };
    // Issues O += P V over the tile's 32 keys (two k16 steps), channels 256 half .. (V = the key
    // tile read MN-major, as attention_decode_kernel<wg>).
    auto issue_pv = [&](const uint32_t(&pas)[2][4], uint32_t kb) {
      wgm::fence();  // acc rescaled and P written by this thread
      const uint64_t v0 = wgm::desc(kb, k_tile * 128, 1024);
#pragma unroll
      for (int ks = 0; ks < 2; ++ks)
#pragma unroll
        for (int nh = 0; nh < 2; ++nh)
          wgm::mma_rs_n128_mn(acc[nh], pas[ks],
                              wgm::desc_at(v0, uint32_t(half * 4 + nh * 2) * (k_tile * 128) +
                                                   uint32_t(ks) * 16 * 128));
      wgm::commit();
    };
    auto fence_acc = [&] {
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        wgm::reg_fence(acc[0][i]);
        wgm::reg_fence(acc[1][i]);
      }
    };

    float sd[16];
    float p[4][4];
    uint32_t pas[2][4];
    float corr[2];
    if (opts & k_ws_opt_no_compute) {
      // Diagnosis (plan.diag 2): the ring alone, every tile released as soon as it landed.
#pragma unroll 1
      for (int k = 0; k < n_live; ++k) {
        uint32_t unused;
        (void)wait_full(k, unused);
        release(k);
      }
    } else if constexpr (sched == k_ws_in_turn) {
      // In turn per tile: S, exchange and softmax, P V.
#pragma unroll 1
      for (int k = 0; k < n_live; ++k) {
        uint32_t mask;
        const uint32_t kb = wait_full(k, mask);
        if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_tile0);
        scores_now(sd, kb);
        if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_s0);
        softmax(k, sd, mask, p, corr);
        rescale(corr);
        pack(p, pas);
        issue_pv(pas, kb);
        wgm::wait<0>();
        fence_acc();
        release(k);
      }
    } else if constexpr (sched == k_ws_alt) {
      // Alternate tiles (plan.alt): warpgroup `half` owns tiles k == half (mod 2). Tile k's
      // online softmax is one chain over the tiles in order, whichever warpgroup runs it:
      //   m_k = max(m_{k-1}, row max of S_k), corr_k = 2^(m_{k-1} - m_k), P_k = 2^(S_k - m_k),
      //   l_k = l_{k-1} corr_k + (this thread's columns of P_k, summed in key order),
      // and both warpgroups then take acc = acc corr_k + P_k V_k (bf16 P) for their channels, in
      // tile order. The owner computes S_k over all 512 channels (32 k16 steps, one f32 chain),
      // the softmax from the (m, l) after tile k - 1 (its partner's hand-off), and hands P_k and
      // (m_k, l_k) to the thread of the same row group and lane in the other warpgroup, which
      // holds the same rows and key columns; that thread derives corr_k from its own m_{k-1}
      // exactly as the owner did. So each warpgroup's S of tile k + 1 runs on the tensor cores
      // while the other one runs the softmax of tile k.
      // Hand-off of tile k: buffer k & 1 in the (unused) exchange area, named barrier 2 + rg
      // (warpgroup 0 writes) or 6 + rg (warpgroup 1 writes) over the 64 threads of the warp pair:
      // the owner arrives (bar.arrive), the reader waits (bar.sync). The owner of tile k + 2
      // rewrites buffer k & 1 only after waiting for the hand-off of tile k + 1, which its
      // partner makes after reading tile k's; so each barrier also alternates arrive / sync.
      // Stage lifetime: the key ring has 4 stages, and a warpgroup holds tile k (P V), tile k + 1
      // (its partner's S, then its own P V) and tile k + 2 (its next S) at once, so each tile is
      // released as soon as this warpgroup's P V of it has completed: the owner waits for P V_k
      // before it issues S_{k+2}, the other warpgroup before its own next softmax (P V_k on the
      // softmax chain, but the producer can run two tiles ahead; releasing tile k only after the
      // next hand-off would leave it one tile ahead). UNMEASURED: the two versions measured
      // (0.57x the tile pairs' time at HCA 1M T=32 on an H100, 0.33x on an H200) had every wgmma
      // serialized by ptxas (C7518 / C7514 below), so they say nothing about this schedule.
      // wgmma groups: every step ends with its P V complete; the other steps wait for S_{k+1}
      // before the rescale (an accumulator rescaled while another wgmma is in flight makes ptxas
      // serialize all of them, C7515), so only S of the next owned tile runs beside a softmax.
      // Check the SASS after any change here: `cuobjdump -sass` of this kernel must show a few
      // WARPGROUP.DEPBAR (the waits above), not one after every HGMMA.
      const int tid = rg * k_warp_size + lane;
      // The owner test per step must be visibly warp-uniform to ptxas: with `half` (threadIdx.x /
      // 128) it inserted a warpgroup wait in the divergent path and serialized every wgmma of
      // the kernel (C7518; the H100 / H200 figures of the first two versions were measured so).
      const int own = __shfl_sync(0xffffffffu, half, 0);
      uint4* const hand_p = reinterpret_cast<uint4*>(xchg_base);  // [buffer][k16 step][128]
      float4* const hand_s = reinterpret_cast<float4*>(hand_p + 2 * 2 * 128);  // [buffer][128]
      auto hand_bar = [&](int k) { return uint32_t((k & 1) ? 6 + rg : 2 + rg); };
      // S of the next owned tile over all 512 channels (32 k16 steps), one commit.
      auto issue_scores_full = [&](float(&sf)[16], uint32_t kb) {
        wgm::fence();
        const uint64_t a0 = wgm::desc(q_s, 16, 1024), b0 = wgm::desc(kb, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < 32; ++kk) {
          const uint32_t block = uint32_t(kk / 4), byte = uint32_t(kk % 4) * 32;
          const uint64_t a = wgm::desc_at(a0, block * (k_rows * 128) + byte);
          const uint64_t b = wgm::desc_at(b0, block * (k_tile * 128) + byte);
          if (kk == 0)
            wgm::mma_ss_n32_first(sf, a, b);
          else
            wgm::mma_ss_n32(sf, a, b);
        }
        wgm::commit();
      };
      // P of owned tiles (pas) and of the partner's (pas_in).
      uint32_t pas_in[2][4];
      uint32_t mask_s = 0, kb_s = 0;
      if (own < n_live) {
        kb_s = wait_full(own, mask_s);
        if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_tile0);
        issue_scores_full(sd, kb_s);
      }
#pragma unroll 1
      for (int k = 0; k < n_live; ++k) {
        const int buf = k & 1;
        if (buf == own) {
          // S_k: waited for at step k - 1 (after its P V), or here for k = 0; nothing else is
          // in flight. wait<0>, not wait<1>: ptxas cannot see that an owned step never follows
          // an owned step, and S_{k+2} would be the newest group on that path (C7514).
          wgm::wait<0>();
#pragma unroll
          for (int i = 0; i < 16; ++i) wgm::reg_fence(sd[i]);
          if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_s0);
          const uint32_t kb = kb_s;
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) p[j][e] = sd[4 * j + e];
          softmax_local(mask_s, p, corr);
          pack(p, pas);
          hand_p[(buf * 2 + 0) * 128 + tid] =
              make_uint4(pas[0][0], pas[0][1], pas[0][2], pas[0][3]);
          hand_p[(buf * 2 + 1) * 128 + tid] =
              make_uint4(pas[1][0], pas[1][1], pas[1][2], pas[1][3]);
          hand_s[buf * 128 + tid] = make_float4(m[0], m[1], l[0], l[1]);
          mbar::named_arrive(hand_bar(k), 2 * k_warp_size);
          rescale(corr);
          issue_pv(pas, kb);
          wgm::wait<0>();
          fence_acc();
          release(k);
          if (k + 2 < n_live) {
            kb_s = wait_full(k + 2, mask_s);
            issue_scores_full(sd, kb_s);
          }
        } else {
          uint32_t unused;
          const uint32_t kb = wait_full(k, unused);
          mbar::named_sync(hand_bar(k), 2 * k_warp_size);
          const uint4 a0 = hand_p[(buf * 2 + 0) * 128 + tid];
          const uint4 a1 = hand_p[(buf * 2 + 1) * 128 + tid];
          const float4 st = hand_s[buf * 128 + tid];
          pas_in[0][0] = a0.x;
          pas_in[0][1] = a0.y;
          pas_in[0][2] = a0.z;
          pas_in[0][3] = a0.w;
          pas_in[1][0] = a1.x;
          pas_in[1][1] = a1.y;
          pas_in[1][2] = a1.z;
          pas_in[1][3] = a1.w;
          const float m_new[2] = {st.x, st.y};
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const float m_use = m_new[i] == -INFINITY ? 0.0f : m_new[i];  // as softmax_local
            corr[i] = exp2f(m[i] - m_use);
            m[i] = m_new[i];
          }
          l[0] = st.z;
          l[1] = st.w;
          wgm::wait<0>();  // S_{k+1} (no accumulator rescale with a wgmma in flight)
          fence_acc();
          rescale(corr);
          issue_pv(pas_in, kb);
          wgm::wait<0>();
          fence_acc();
          release(k);
        }
      }
    }

    if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_loop);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
      l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
    if constexpr (fold)
      fold_epilogue(acc, m, l, half, h0, h1);
    else if constexpr (part_bf16)
      store_split_partial_bf16(acc, m, l, half, lane, h0, h1, heads, part,
                               reinterpret_cast<__nv_bfloat16*>(part_o), part_ml);
    else
      store_split_partial<keep_l2>(acc, m, l, half, lane, h0, h1, heads, part, part_o, part_ml);
    if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_end);
  };

  if (warp >= k_ws_consumers) {
    mbar::setmaxnreg_dec<k_ws_producer_regs>();
    produce();
  } else {
    mbar::setmaxnreg_inc<k_ws_consumer_regs>();
    consume();
  }
}

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
template <typename act_t, bool l2 = false,
          typename part_t = float>  // l2: as attention_decode_combine_rows
__global__ void __launch_bounds__(k_combine_threads, 1)
    attention_decode_combine(const part_t* part_o, const float2* part_ml, const float* sinks,
                             int heads, int splits, act_t* out, unsigned long long* trace) {
  __shared__ float weight_s[k_combine_chunk];
  __shared__ float red[k_combine_threads / k_warp_size];
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_entry);
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
    // 16 independent 16-byte loads in flight per thread (8 left the HBM mostly idle at T = 1 with
    // ~130 splits: 128 threads x 8 x 16 B per CTA, one CTA per head). The sum runs in split
    // order either way.
#pragma unroll 16
    for (int i = 0; i < n; ++i) {
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
  // few rows (T <= 16), and 4 blocks (128 registers) put the 16-split weights on the stack.
  return max_splits <= 2 ? 8 : max_splits <= 4 ? 5 : 2;
}

// l2 (plan.partials_l2): the partials are read with the L2 evict_first priority (the main kernel
// stored them with evict_last; they are not kept past their one read).
template <int max_splits, typename act_t, bool l2 = false, typename part_t = float>
__global__ void __launch_bounds__(k_combine_rows_warps* k_warp_size,
                                  combine_rows_min_blocks<max_splits>())
    attention_decode_combine_rows(const part_t* part_o, const float2* part_ml, const float* sinks,
                                  int64_t rows, int heads, int splits, act_t* out,
                                  unsigned long long* trace) {
  constexpr int chunk = max_splits < k_combine_rows_chunk ? max_splits : k_combine_rows_chunk;
  constexpr int cols = k_d / 4 / k_warp_size;  // float4 columns per lane
  static_assert(max_splits % chunk == 0 && cols == 4);
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_entry);
  pdl_wait();  // the main grid's partials (PDL, as attention_decode_combine)
  if (threadIdx.x == 0) trace_stamp(trace, 1, k_adt_setup);
  const int lane = threadIdx.x % k_warp_size;
  const int64_t row = int64_t(blockIdx.x) * k_combine_rows_warps + threadIdx.x / k_warp_size;
  if (row >= rows) return;  // warp-uniform; no barrier follows
  const int64_t t = row / heads;
  const int h = int(row % heads);
  constexpr bool p16 = !std::is_same_v<part_t, float>;
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
  if (plan.combine_rows && splits <= k_attention_decode_max_combine_rows_splits) {
    const dim3 grid(unsigned(ceil_div(rows, k_combine_rows_warps)));
    const dim3 block(k_combine_rows_warps * k_warp_size);
    auto* const kernel = splits <= 2   ? attention_decode_combine_rows<2, act_t, l2, part_t>
                         : splits <= 4 ? attention_decode_combine_rows<4, act_t, l2, part_t>
                                       : attention_decode_combine_rows<8, act_t, l2, part_t>;
    return launch_pdl(true, kernel, grid, block, 0, stream, part_o, part_ml, sinks, rows,
                      int(heads), splits, out, plan.trace);
  }
  return launch_pdl(true, attention_decode_combine<act_t, l2, part_t>, dim3(unsigned(rows)),
                    dim3(k_combine_threads), 0, stream, part_o, part_ml, sinks, int(heads), splits,
                    out, plan.trace);
}
template <typename act_t>
cudaError_t launch_combine(int64_t heads, int64_t tokens, const attention_decode_plan& plan,
                           const float* part_o, const float2* part_ml, const float* sinks,
                           act_t* out, cudaStream_t stream, bool l2 = false) {
  return l2 ? launch_combine_as<true>(heads, tokens, plan, part_o, part_ml, sinks, out, stream)
            : launch_combine_as<false>(heads, tokens, plan, part_o, part_ml, sinks, out, stream);
}

// The ws kernel's run-time options (k_ws_opt_*: bench diagnoses).
int ws_opts(const attention_decode_plan& plan) {
  return plan.diag == 1   ? k_ws_opt_no_load
         : plan.diag == 2 ? k_ws_opt_no_compute
         : plan.diag == 4 ? k_ws_opt_divisions
                          : 0;
}
// The consumer schedule a plan runs.
int ws_sched(const attention_decode_plan& plan) {
  return plan.alt ? k_ws_alt : k_ws_in_turn;
}
template <int mode, typename act_t>
auto ws_kernel(const attention_decode_plan& plan) {
  switch (ws_sched(plan)) {
    case k_ws_alt:
      return attention_decode_ws_kernel<k_ws_alt, mode, act_t>;
    default:
      return attention_decode_ws_kernel<k_ws_in_turn, mode, act_t>;
  }
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
  const auto launch_ws_split = [&](auto* ws, bool fold, bool keep,
                                   bool p16 = false) -> cudaError_t {
    if (const cudaError_t e = allow_dynamic_smem(ws, k_ws_smem); e != cudaSuccess) return e;
    if (const cudaError_t e =
            launch_pdl(plan.pdl, ws, grid, dim3(k_ws_threads), k_ws_smem, stream, q, int(heads),
                       window, comp, int(plan.window_capacity), int(plan.comp_capacity),
                       int(plan.keys_per_split), int(plan.splits), scale * k_log2e, part_o, part_ml,
                       sinks, out, ws_opts(plan), plan.trace);
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
      const bool p16 = !fold && plan.partials_bf16 && plan.combine && ws_sched(plan) == k_ws_alt;
      const bool keep = !fold && plan.partials_l2 && plan.combine && ws_sched(plan) == k_ws_alt;
      auto* const ws = fold   ? ws_kernel<k_ws_fold, act_t>(plan)
                       : p16  ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_bf16, act_t>
                       : keep ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_keep, act_t>
                              : ws_kernel<k_ws_split, act_t>(plan);
      return launch_ws_split(ws, fold, keep, p16);
    }
  }
  if constexpr (pool_traits<pool_t>::records) {
    // FP8 records on the warp-specialized kernel wherever the plan runs it with alternate tiles
    // (the producer warpgroup dequantizes), so records take the bf16 pools' schedule and
    // arithmetic; in turn (plan.alt off) they keep the synchronous kernel below.
    if (plan.wgmma && plan.producer && plan.alt) {
      const bool fold = plan.fold && plan.splits == 1;
      const bool p16 = !fold && plan.partials_bf16 && plan.combine;
      const bool keep = !fold && plan.partials_l2 && plan.combine;
      auto* const ws = fold   ? attention_decode_ws_kernel<k_ws_alt, k_ws_fold, act_t, pool_t>
                       : p16  ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_bf16, act_t, pool_t>
                       : keep ? attention_decode_ws_kernel<k_ws_alt, k_ws_split_keep, act_t, pool_t>
                              : attention_decode_ws_kernel<k_ws_alt, k_ws_split, act_t, pool_t>;
      return launch_ws_split(ws, fold, keep, p16);
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
