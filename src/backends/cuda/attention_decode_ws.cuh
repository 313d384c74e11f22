// The warp-specialized split-KV decode kernel (attention_decode.cu; design in
// attention_decode_ws_layout.cuh): a producer warpgroup fills the key ring, 8 consumer warps
// compute.
#pragma once

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/attention_decode_loads.cuh"
#include "backends/cuda/attention_decode_merge.cuh"
#include "backends/cuda/attention_decode_partials.cuh"
#include "backends/cuda/attention_decode_softmax.cuh"
#include "backends/cuda/attention_decode_wgmma.cuh"
#include "backends/cuda/attention_decode_ws_layout.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/tma.cuh"

namespace dsv4::cuda {

namespace {

// pool_t: bf16 rows, or FP8 records (kv_fp8_record: alternate tiles, split / fold modes).
// key_tma: the TMA key tiles of paged parts (bf16 pools; the maps parameter, ws_key_maps_t).
template <int sched, int mode, typename act_t, typename pool_t = __nv_bfloat16,
          bool key_tma = false>
__global__ void __launch_bounds__(k_ws_threads, 1)
    attention_decode_ws_kernel(const act_t* q, int heads, kv_rows<pool_t> window,
                               kv_rows<pool_t> comp, int cap_w, int cap_c, int keys_per_split,
                               int splits, float scale_log2, float* part_o, float2* part_ml,
                               const float* sinks, act_t* out, int opts, unsigned long long* trace,
                               const __grid_constant__ ws_key_maps_t<key_tma> maps) {
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_entry);
  constexpr bool fold = mode == k_ws_fold;
  constexpr bool keep_l2 = mode == k_ws_split_keep;
  constexpr bool part_bf16 = mode == k_ws_split_bf16;
  constexpr bool records = pool_traits<pool_t>::records;
  static_assert(std::is_same_v<pool_t, __nv_bfloat16> || records);
  static_assert(!records || !key_tma);
  // Records stage their raw rows in the exchange area's part that only alt leaves free.
  static_assert(!records || ((sched & k_ws_alt_bit) != 0));
  // Alternate tiles with the lazy rescale (attention_decode_ws_modes.h; softmax_local).
  constexpr bool lazy = (sched & k_ws_lazy_bit) != 0;
  static_assert(((sched & k_ws_alt_bit) != 0) || !lazy);
  // The per-tile softmax's 2^x: exp2_ftz under alternate tiles (attention_decode_softmax.cuh; both
  // pools take it there, so records and bf16 pools stay equal bit for bit), exp2f in turn, the
  // synchronous kernel's arithmetic (the FP8 records' in-turn path, compared with the bf16 pools'
  // in-turn path bit for bit).
  auto exp2_alt = [](float x) { return (sched & k_ws_alt_bit) != 0 ? exp2_ftz(x) : exp2f(x); };
  namespace wgm = attention_wgmma;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_ws_ring;
  float* const xchg_base = reinterpret_cast<float*>(smem + k_ws_xchg);
  uint32_t* const masks = reinterpret_cast<uint32_t*>(smem + k_ws_masks);
  const uint32_t full_bar = q_s + k_ws_bars, empty_bar = full_bar + 8 * k_ws_stages;

  pdl_trigger();  // the combine kernel may start (it waits for this grid in pdl_wait)
  // plan.pdl: pdl_wait() returns once the previous kernel's outputs (q, the pools' new rows, the
  // indexer's rows) are complete. plan.tables_early (k_ws_opt_tables_early): the step's tables
  // (token_seq, n_visible, block tables, the window's explicit rows) were written before this
  // launch's chain of programmatic launches began, so the key space, the mbarriers and the first
  // tiles' indices are set up before the wait (beside the predecessor's tail); q, rows, the
  // compressed part's explicit rows and every store come after it.
  const bool tables_early = (opts & k_ws_opt_tables_early) != 0;
  if (!tables_early) pdl_wait();
  const int split = blockIdx.x;
  const int group = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;

  const split_keys<pool_t> keys =
      split_key_space(window, comp, t, cap_w, cap_c, split, keys_per_split);
  const slot_space<pool_t>& space = keys.space;
  const int hi = space.hi;
  const int n_live = keys.n_live;
  auto tile_start = [&](int k) { return keys.tile_start(k); };

  const int64_t head0 = int64_t(group) * k_rows;
  const int64_t part = (t * splits + split) * heads;
  // (fold: a CTA without keys still writes its rows, 0.)
  if (n_live == 0 && !fold) {  // uniform over the CTA: before any barrier
    if (tables_early) pdl_wait();  // (the previous combine may still read part_ml)
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
    // (key_tma: tensor copies complete on `full`.)
    if constexpr (key_tma) mbar::fence_init();
  }
  __syncthreads();  // the only CTA-wide barrier: the mbarriers are initialized
  if (threadIdx.x == 0) {
    trace_stamp(trace, 0, k_adt_setup);
    trace_smid(trace);
  }

  // Producer warp pw (warps 8..11). Lane l of every producer warp handles slot l of each tile:
  // its index (loaded 3 tiles ahead) and row pointer; the warp then copies rows
  // 8 pw .. 8 pw + 7 of the tile, each lane 2 of the 64 16-byte chunks of a row.
  // tables_early: the producers load the first tiles' indices before their wait where those
  // come from the tables (a paged or absent compressed part, or the split's first 4 tiles in the
  // window).
  const bool index_early = tables_early && (comp.rows == nullptr || keys.len1 >= 4);
  auto produce = [&] {
    if (tables_early && !index_early) pdl_wait();
    const int pw = warp - k_ws_consumers;
    const void* any_global = q;
    auto index_of_tile = [&](int j) -> int32_t {
      if (j >= n_live) return -1;
      const int32_t* src = space.index_src(tile_start(j) + lane);
      return src ? __ldg(src) : -1;  // -1: row_ref gives no row
    };
    if constexpr (key_tma) {
      if (pw == 0 && lane == 0)
        for (int i = 0; i < 2; ++i)
          if ((maps.valid >> i) & 1) tma::prefetch_map(&maps.map[i]);
    }
    const bool no_load = (opts & k_ws_opt_no_load) != 0;
    if constexpr (records) {
      using ref_t = typename pool_traits<pool_t>::ref;
      // FP8 records land in the bf16 stage of their tile and are converted there in place
      // (dequant_codes8_bf16: the synchronous kernel's values bit for bit) before the tile is
      // published. Warp pw owns rows 8 pw .. 8 pw + 7, i.e. the 1 KB chunk at b * 4096 + 1024 pw
      // of every 64-channel column block b of the stage (wg_offset): only this warp touches its
      // chunks. Raw codes of row rr land in chunk 3 + rr / 2 at 448 (rr % 2), its 8 scale bytes
      // (cp.async, lane rr < 8) in chunk 6 at 896 + 8 rr; every lane copies two 16-byte chunks of
      // RoPE (bf16) of row l / 4 straight to their swizzled place in chunk 7. Codes: every lane
      // copies the 7 16-byte chunks it converts (cp.async with the row reference it holds for
      // the RoPE; missing rows zero-filled as in the RoPE and scales). ATTN15's producer made 36
      // 16-byte copies per row, each with its reference by shuffle (references and copy issue
      // 35-75% of its loop); ATTN17's per-row bulk copies (lane rr < 8, one 448-byte copy on a
      // barrier per warp and stage) issued as a uniform-datapath loop of ~70 instructions per
      // tile (session 25's ncu). KVFP8B (H100, one process per binary, same call; the bulk copies
      // as plan.diag 64 of the measured binary, since removed): HCA 1M T=32 120.8-121.5 ->
      // 110.2-110.9 us, T=8 42.9 -> 40.2, Pro HCA 1M T=32 227.4-230.2 -> 205.1-207.3, the ring
      // alone at HCA 1M T=32 86.1 -> 71.9. Conversion: lane l converts codes 16 (l % 4) .. + 15
      // of row l / 4 in each code block; chunks 0..2 hold no raw bytes, so blocks 0..2 are
      // written at once, blocks 3..6 after every lane has read its row (__syncwarp).
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
      uint8_t* const mask_bytes = reinterpret_cast<uint8_t*>(masks);
      // Lane l: row crr = l / 4 of the warp, output chunks 2 (l % 4), + 1 of each block.
      const int crr = lane >> 2, cq = lane & 3;
      const int orow = (pw * k_ws_rows_per_producer + crr) * 128;
      const int out0 = orow + (((2 * cq) ^ crr) << 4);
      const int out1 = orow + (((2 * cq + 1) ^ crr) << 4);
      // Blocks 0..3 are loaded before the first store (a store to blocks 0..2 may alias the raw
      // chunks 3..6 for the compiler, which then issued each block's loads after the previous
      // block's stores; all 7 loads first spilled under the 56-register cap). Rows without a key:
      // their codes and scale bytes were zero-filled at issue (issue_tile), so they convert to
      // +0 with no per-row select here.
      // Fast: dequant_codes8_bf16_fast where every scale byte of the warp's 8 rows allows it
      // (a warp-uniform choice per tile; kv_record.h: NaN codes only under scale 0xff, which
      // takes the exact general form).
      auto convert_tile = [&](unsigned char* st) {
        unsigned char* const w = st + wbase;
        const unsigned char* const raw = w + (3 + (crr >> 1)) * blk + (crr & 1) * k_nope + cq * 16;
        const uint2 sc = *reinterpret_cast<const uint2*>(w + scale_off + crr * k_rec_scale);
        auto get = [&](int b) { return *reinterpret_cast<const uint4*>(raw + b * 64); };
        auto convert = [&](auto fast_c) {
          constexpr bool fast = decltype(fast_c)::value;
          auto put = [&](int b, uint4 c) {
            const uint32_t word = b < 4 ? sc.x : sc.y;
            const uint32_t s2 = fast ? e8m0_bf16x2_fast(word, b & 3) : e8m0_bf16x2(word, b & 3);
            *reinterpret_cast<uint4*>(st + b * blk + out0) =
                fast ? dequant_codes8_bf16_fast(make_uint2(c.x, c.y), s2)
                     : dequant_codes8_bf16(make_uint2(c.x, c.y), s2);
            *reinterpret_cast<uint4*>(st + b * blk + out1) =
                fast ? dequant_codes8_bf16_fast(make_uint2(c.z, c.w), s2)
                     : dequant_codes8_bf16(make_uint2(c.z, c.w), s2);
          };
          const uint4 a0 = get(0), a1 = get(1), a2 = get(2), a3 = get(3);
          put(0, a0);  // (chunks 0..2 hold no raw bytes: written before every lane has read)
          put(1, a1);
          put(2, a2);
          const uint4 a4 = get(4), a5 = get(5), a6 = get(6);
          __syncwarp();  // every lane has read its row's codes and scales (chunks 3..6)
          put(3, a3);
          put(4, a4);
          put(5, a5);
          put(6, a6);
        };
        if (__any_sync(0xffffffffu, record_scales_slow(sc)))
          convert(std::false_type{});
        else
          convert(std::true_type{});
      };
      // Depth 2 (H200, ATTN15 call 1): a third tile in flight left the ring alone as fast and
      // the whole kernel slower (the producer then waits for tile j - 1's release, which needs
      // the consumers' P V of it, instead of tile j - 2's).
      constexpr int lead = 2;
      static_assert(lead <= k_ws_stages - 1);
      // The loop, compiled once for power-of-two block sizes and once for any.
      auto run = [&](auto pow2_c) {
        constexpr bool shifts = decltype(pow2_c)::value;
        // Slot i of the window (in_window) or of the compressed part, by shifts: its index
        // source (space.index_src) and its record (row_ref). One copy per part, the part a
        // constant in each (not a select of every field by the slot, which ptxas made a chain of
        // predicated parameter loads per tile): the tiles of the compressed part, all but a
        // split's first few, read its fields straight from the kernel parameters.
        auto index_in = [&](auto in_window_c, int s) -> const int32_t* {
          constexpr bool in_window = decltype(in_window_c)::value;
          const int64_t seq = in_window ? space.seq_w : space.seq_c;
          const int32_t* const rows = in_window ? window.rows : comp.rows;
          if (s >= (in_window ? space.n_w : space.n_c)) return nullptr;
          if (rows) return rows + t * (in_window ? window.rows_width : comp.rows_width) + s;
          if (seq < 0 || seq >= (in_window ? window.table_rows : comp.table_rows)) return nullptr;
          const int64_t width = in_window ? window.table_width : comp.table_width;
          const uint32_t block = uint32_t(s) >> (in_window ? w_bs : c_bs);
          if (block >= width) return nullptr;
          return (in_window ? window.block_table : comp.block_table) + seq * width + block;
        };
        auto ref_in = [&](auto in_window_c, uint32_t i, int32_t v) -> ref_t {
          constexpr bool in_window = decltype(in_window_c)::value;
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
        };
        auto index_of_row = [&](int j) -> int32_t {
          if (j >= n_live) return -1;
          const int s = tile_start(j) + slot_i;
          const int32_t* src = nullptr;
          if constexpr (!shifts) {
            src = space.index_src(s);
          } else if (s < hi) {
            src =
                s < cap_w ? index_in(std::true_type{}, s) : index_in(std::false_type{}, s - cap_w);
          }
          return src ? __ldg(src) : -1;  // -1: no row
        };
        auto ref_of_row = [&](int j, int32_t v) -> ref_t {
          if (j >= n_live) return ref_t{};
          const int s = tile_start(j) + slot_i;
          if constexpr (!shifts) {
            return space.row_ref(s, v);
          } else {
            return s < cap_w ? ref_in(std::true_type{}, uint32_t(s), v)
                             : ref_in(std::false_type{}, uint32_t(s - cap_w), v);
          }
        };
        // Tile into stage sn: this warp's byte of the tile's mask, then its copies.
        auto issue_tile = [&](const ref_t& p, int sn) {
          const uint32_t st = k_s + uint32_t(sn * k_tile_bytes);
          const bool ok = p.data != nullptr;
          const uint32_t valid8 = __ballot_sync(0xffffffffu, ok) & 0xffu;
          if (lane == 0) mask_bytes[4 * sn + pw] = uint8_t(valid8);
          if (!no_load) {
            const uint8_t* const d = reinterpret_cast<const uint8_t*>(
                __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p.data), crr));
            cp_async_cg_16_zfill_noclobber(
                st + uint32_t(7 * blk + out0),
                d ? static_cast<const void*>(d + k_nope + 32 * cq) : any_global, d);
            cp_async_cg_16_zfill_noclobber(
                st + uint32_t(7 * blk + out1),
                d ? static_cast<const void*>(d + k_nope + 32 * cq + 16) : any_global, d);
            // Codes: lane l copies the 7 16-byte chunks it converts (row crr, codes 16 cq + 64 b)
            // with the row reference it already holds for the RoPE; missing rows zero-filled
            // (the stage holds an older tile's bytes, which could read as NaN codes). One group
            // with the RoPE and scales (cp_async_wait in the loop).
            const uint32_t dst =
                st + uint32_t((3 + (crr >> 1)) * blk + wbase + (crr & 1) * k_nope + 16 * cq);
            const uint8_t* const src = (d ? d : static_cast<const uint8_t*>(any_global)) + 16 * cq;
#pragma unroll
            for (int b = 0; b < codes_blocks; ++b)
              cp_async_cg_16_zfill_noclobber(dst + uint32_t(64 * b), src + 64 * b, d != nullptr);
            if (lane < k_ws_rows_per_producer)
              cp_async_ca_zfill_noclobber<8>(st + uint32_t(scale_off + wbase + lane * k_rec_scale),
                                             ok ? static_cast<const void*>(p.scales) : any_global,
                                             ok);
          }
          cp_async_commit_noclobber();
        };
        int32_t u0 = index_of_row(0), u1 = index_of_row(1), u2 = index_of_row(2),
                u3 = index_of_row(3);
        if (index_early) pdl_wait();
#pragma unroll
        for (int j = 0; j < lead; ++j) {
          if (j < n_live)
            issue_tile(ref_of_row(j, j == 0 ? u0 : u1), j);
          else
            cp_async_commit_noclobber();  // an empty group keeps the count
        }
#pragma unroll 1
        for (int j = 0; j < n_live; ++j) {
          const int stage = j % k_ws_stages;
          // Tile j's codes, scales and RoPE (later groups may be pending).
          cp_async_wait_noclobber<lead - 1>();
          __syncwarp();  // every lane's copies are visible to the warp
          if (!no_load) convert_tile(smem + k_ws_ring + stage * k_tile_bytes);
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
            cp_async_commit_noclobber();  // an empty group keeps the count
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
      int32_t v0 = index_of_tile(0), v1 = index_of_tile(1), v2 = index_of_tile(2);
      if (index_early) pdl_wait();
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
        // TMA (ws_key_maps): a tile wholly in a part whose map is set (paged, block size a
        // multiple of 32, tile starts 32-aligned in the part) with every slot valid is 32
        // consecutive rows of one block, from lane 0's row on (no shuffles or votes needed).
        const int s0 = tile_start(j);
        const int which = s0 + k_tile <= cap_w ? 0 : s0 >= cap_w ? 1 : 2;
        const bool by_tma = key_tma && ((maps.valid >> which) & 1) != 0 && mask == 0xffffffffu;
        const uint32_t dst = k_s + uint32_t(stage) * k_tile_bytes;
        if (by_tma && !no_load) {
          if constexpr (key_tma) {
            if (pw == 0 && lane == 0) {
              masks[stage] = mask;
              // The release arrival, with the tile's bytes (issued before its copies).
              mbar::arrive_expect_tx(full_bar + 8 * stage, uint32_t(k_tile_bytes));
              const int32_t row0 = int32_t((p - (which == 0 ? window.pool : comp.pool)) / k_d);
              const void* const map = &maps.map[which];
              // The tile as one 3-D box (ws_key_maps); 8 2-D boxes under plan.diag 128.
              if ((opts & k_ws_opt_key_box2d) == 0) {
                tma::g2s_3d(dst, map, 0, row0, 0, full_bar + 8 * stage);
              } else {
#pragma unroll
                for (int b = 0; b < k_chunks / 8; ++b)
                  tma::g2s_2d(dst + uint32_t(b * k_tile * 128), map, b * 64, row0,
                              full_bar + 8 * stage);
              }
              if (j == 0) trace_stamp(trace, 0, k_adt_index);
            }
          }
        } else if (!no_load) {
#pragma unroll
          for (int i = 0; i < k_ws_rows_per_producer; ++i) {
            const int r = pw * k_ws_rows_per_producer + i;
            const pool_t* pr = reinterpret_cast<const pool_t*>(
                __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p), r));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int c = lane + k_warp_size * h;
              cp_async_cg_16_zfill_noclobber(dst + wg_offset<k_tile>(r, c),
                                             pr ? static_cast<const void*>(pr + c * 8) : any_global,
                                             pr != nullptr);
            }
          }
        }
        // Published as the rows land: the hardware makes this thread's arrival once its copies
        // are complete. Lane 0 of warp 0 also arrives after writing the mask (release).
        cp_async_mbarrier_arrive_noinc(full_bar + 8 * stage);
        if (pw == 0 && lane == 0 && !(by_tma && !no_load)) {
          masks[stage] = mask;
          mbar::arrive(full_bar + 8 * stage);
          if (j == 0) trace_stamp(trace, 0, k_adt_index);
        }
      }
    }
    if (pw == 0 && lane == 0) trace_stamp(trace, 0, k_adt_issued);
    cp_async_wait_noclobber<0>();
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
    if (tables_early) pdl_wait();  // q; fold: out may still be read by the previous launch
    if (n_live > 0) {  // always in the split kernel; a fold CTA without keys needs no query
      load_query_tile<true>(q, t, heads, head0, smem, q_s);
      if constexpr (sizeof(act_t) == 2) {
        cp_async_commit_noclobber();
        cp_async_wait_noclobber<0>();
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
      // Warp-uniform to ptxas (softmax_local branches on it between wgmmas).
      mask = __shfl_sync(0xffffffffu, masks[stage], 0);
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
      float tmax[2] = {-INFINITY, -INFINITY};
      // A tile with all 32 slots valid (all but a part's last tile) takes no per-key select: with
      // one expression for both cases ptxas built every key's predicate (shift, test, or with
      // all-valid, select) on every tile, ~55 of the 220 SASS instructions from the owner's S
      // wait to its hand-off (session 31, l31c / l31f). Same values bit for bit; H200, the
      // engine's plan: HCA 1M rows 1.004-1.018x, short steps unchanged (l31f). The mask is
      // warp-uniform (wait_full), so the branch does not diverge.
      if (mask == 0xffffffffu) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[j][e] *= scale_log2;
            tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
          }
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = j * 8 + 2 * (lane % 4) + (e & 1);
            s[j][e] = ((mask >> key) & 1u) ? s[j][e] * scale_log2 : -INFINITY;
            tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
          }
      }
      float m_use[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 1));
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 2));
        float m_new = fmaxf(m[i], tmax[i]);
        // Lazy rescale: the reference maximum moves only when the row maximum passes it by more
        // than k_lazy_rescale (log2 units), so the probabilities stay <= 2^k_lazy_rescale and
        // corr is exactly 1 (2^0) on most tiles: the accumulator rescale is skipped. m stays the
        // reference of acc and l (the partials, fold and combine take it as the maximum).
        if constexpr (lazy) m_new = m_new > m[i] + k_lazy_rescale ? m_new : m[i];
        m_use[i] = m_new == -INFINITY ? 0.0f : m_new;  // no -inf - -inf
        corr[i] = exp2_alt(m[i] - m_use[i]);
        m[i] = m_new;
        l[i] *= corr[i];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] = exp2_alt(s[j][e] - m_use[e >> 1]);
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
        pack_probs(p, pas);  // no P V in flight: a wgmma reads its registers asynchronously
        issue_pv(pas, kb);
        wgm::wait<0>();
        fence_acc();
        release(k);
      }
    } else if constexpr (((sched & k_ws_alt_bit) != 0)) {
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
      // The owner's softmax of tile j (its S complete in sd): P (pas), the factor corr, and the
      // hand-off of P and (m, l) to the partner.
      auto softmax_hand = [&](int j) {
        const int b = j & 1;
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int e = 0; e < 4; ++e) p[r][e] = sd[4 * r + e];
        softmax_local(mask_s, p, corr);
        pack_probs(p, pas);  // (no P V in flight)
        hand_p[(b * 2 + 0) * 128 + tid] = make_uint4(pas[0][0], pas[0][1], pas[0][2], pas[0][3]);
        hand_p[(b * 2 + 1) * 128 + tid] = make_uint4(pas[1][0], pas[1][1], pas[1][2], pas[1][3]);
        hand_s[b * 128 + tid] = make_float4(m[0], m[1], l[0], l[1]);
        mbar::named_arrive(hand_bar(j), 2 * k_warp_size);
      };
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
          softmax_hand(k);
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
            corr[i] = exp2_alt(m[i] - m_use);
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
    sum_row_quads(l);
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

}  // namespace

}  // namespace dsv4::cuda
