// The warp-specialized split-KV decode kernel's design, shared-memory layout, register split
// (attention_decode.cu; its schedules and modes: attention_decode_ws_modes.h).
#pragma once

#include <cuda.h>  // CUtensorMap (the type only: the maps are encoded through the runtime's driver
                   // entry point, attention_decode.cu)

#include <type_traits>

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/attention_decode_ws_modes.h"

namespace dsv4::cuda {

namespace {

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
// Again on the bf16 producer (ATTN26 helper, H200 2026-11-27, bench_attention --steps, one
// process, graph replays alternating three rounds, outputs equal): prefetch.global.L2 of tile
// j + 2's rows (2 CCTL.E.PF2 of 128 B per producer thread while issuing tile j, from the index
// loaded a tile earlier), no prefetch / prefetch 0.953x at HCA 1M T=8 (38.08 / 39.97 us),
// 0.937x T=16, 0.929x T=32, 0.962x HCA 128K T=32, 0.970x Flash CSA T=32; one tile ahead no
// better (1.00x the two-ahead time); the ring alone got slower with it too. Rows that every
// token shares (L2-resident; --alt-rows "hot alt", the same binary) gain 0.7% at HCA 1M T=8
// (39.39 vs 39.68 us): the loop does not wait on the rows' latency from HBM.
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
// 64-key blocks on SS m64n64k16 with the output channels split between the warpgroups and their
// softmaxes staggered (FlashMLA's "seesaw", session 29, branch wip/seesaw; H200 l29a-l29c, parity
// 161/161): 0.60-0.79x this kernel (HCA 1M T=32 132.6-152.3 vs 91.3-92.7 us). Two 64 KB block
// buffers beside the query tile leave no refill lead (ring alone 90-93 vs 72 us: rows in two
// 512-byte halves, a half refilled only once the previous pair freed it) and both warpgroups'
// next S end together, so the staggered softmaxes start on an idle pipe (consumers alone 79-89 vs
// 75 us; ~7000 cycles per 128 keys against a 4096-cycle pipe floor).
// The consumers never meet in a CTA-wide barrier inside the loop: the two warps of a row group
// (w, w + 4) meet on a named barrier of 64 threads for the score exchange, double-buffered by
// tile parity (the partner reads tile k's half before it arrives at tile k + 1's barrier, which
// the writer of tile k + 2 has passed). Per tile a 32-bit validity mask replaces the per-slot
// flags, and the accumulator rescale is skipped when no row maximum of the warp changed
// (multiplying by 1 is the identity, so the result is the same bit for bit).
// Lazy rescale (alternate tiles, k_ws_lazy_bit): the reference maximum of a row moves only when
// the row maximum passes it by more than this (log2 units): probabilities <= 2^8, no f32 or bf16
// range concern, and the accumulators are rescaled only on those tiles. With the exact rescale
// (every tile whose row maximum grew) each consumer warp multiplied its 128 accumulators on most
// tiles (the bench's scores: a row maximum grows on ~1 / k of tiles, 16 rows per warp). ATTN27
// helper (H200 2026-11-27, bench_attention --steps, one process, graph replays alternating three
// rounds; exact = plan.diag 8), exact / lazy: HCA 1M T=8 37.98 / 36.51 us (1.040x), T=16 58.30 /
// 56.16 (1.038x), T=32 101.79 / 99.36 (1.024x), Flash CSA T=32 19.46 / 19.10 (1.018x). The
// consumers alone (no row copies) are not faster (HCA 1M T=8 0.99 us per tile either way): the
// FMULs competed with the producer warps for issue slots, the loop with the ring went 1.36 ->
// 1.28 us per tile. Not bit-equal to the exact rescale (P rounded to bf16 at another scale).
// Key tiles by TMA (ATTN28): a bf16 tile of a part in the paged form with a block size that is a
// multiple of 32 (tiles 32-aligned in the part), all 32 slots valid, is 32 consecutive rows of one
// block; it is loaded by one tensor copy (a 3-D box of 64 channels x 32 rows x 8 column blocks,
// SWIZZLE_128B: column blocks of 32 rows x 128 bytes, which is wg_offset's layout) issued by one
// producer lane and completing on the stage's `full` barrier (that lane's release arrival
// carries the tile's 32 KB as expected transaction bytes), instead of 2048 16-byte cp.async of
// the 128 producer threads. Any other tile (explicit rows, partial tiles, invalid rows:
// zero-filled) keeps the cp.async path. The maps cover the window and the compressed pools
// ([pool_rows, 512] bf16 viewed as (64, rows, 8) at strides (1024, 128) bytes), encoded on the
// host per launch (cached; kernel parameters, so graph capture keeps them). Figures: ATTN28
// notes. Until session 32 a tile was 8 copies of 2-D boxes (32 rows x 64 channels, the same
// bytes in the same places; plan.diag 128 keeps that form): one box per tile is 1.065-1.12x at
// HCA 1M (H200 l32c, bench_attention --steps, one process, graph replays best of 3, outputs
// equal bit for bit: T=32 92.10 -> 82.18 us, T=16 52.99 -> 47.78, T=8 35.71 -> 33.76), its key
// loop ~1.03 us per tile at T=32 against 1.20, while the ring alone is no faster (70.9 vs 73.1
// us): the 8 copies cost the consumers, not the stream.
// ATTN29: the maps (two 64-byte aligned CUtensorMaps) made the parameter block 1280 bytes instead
// of 808, and launches without a map paid for it too (H200 --focus, event-timed: Flash CSA T=1 /
// T=8 13.70-13.89 / 15.68-15.94 us vs 13.38-13.57 / 15.26-15.46 before ATTN28; the maps in
// global memory behind a pointer, 832 bytes, gave CSA back but cost the TMA launches 0.3-1 us,
// ATTN29 notes). So the kernel takes the maps only in its key_tma instances (ws_key_maps), which
// the host launches where a part has a map; the others (FP8 records, explicit rows, diag 16,
// splits under k_attention_decode_key_tma_min_tiles) take ws_no_key_maps, an empty trailing
// parameter: the kernels before ATTN28, SASS-identical, with a 809-byte block.
struct ws_key_maps {
  CUtensorMap map[2];  // the window pool, the compressed pool
  int valid = 0;       // bit i: map[i] encoded
};
struct ws_no_key_maps {
  static constexpr int valid = 0;
};
template <bool key_tma>
using ws_key_maps_t = std::conditional_t<key_tma, ws_key_maps, ws_no_key_maps>;
constexpr float k_lazy_rescale = 8.0f;
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
static_assert(k_ws_smem <= 227 * 1024 && k_ws_bars % 8 == 0);

}  // namespace

}  // namespace dsv4::cuda
