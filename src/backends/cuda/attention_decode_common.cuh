// Pieces every split-KV decode attention kernel shares (attention_decode.cu and its
// attention_decode_*.cuh, one translation unit): the tile geometry, the FP8 record stage, the
// per-pool ring traits and shared-memory sizes, plan.trace stamps and the tile layouts.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/attention_decode.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/paged_rows.cuh"

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

}  // namespace

}  // namespace dsv4::cuda
