// The FP8 KV record: one cached attention row (nope_dims non-RoPE values + rope_dims RoPE
// values, DeepSeek-V4: 448 + 64) stored as FP8 e4m3 values with one power-of-two (E8M0) scale per
// 64 non-RoPE values, and the RoPE values as BF16 (docs/dsv4-model.md §3.7). V4: 448 + 128 + 7 + 1
// (pad) = 584 bytes per row, instead of 1024 as BF16.
//
// Why here (io): it is a byte format like the checkpoint formats, and the layers below the cache
// (both backends) need it: core -> io -> model -> backends -> cache.
//
// Byte layout of a pool of records (FlashMLA's "MODEL1" FP8 layout, which vLLM and SGLang use for
// DeepSeek-V4; rows are grouped in blocks of rows_per_block, a block is block_bytes long):
//
//   block b = row / rows_per_block, slot t = row % rows_per_block, base = b * block_bytes
//   data  = base + t * data_bytes            (data_bytes = nope_dims + 2 * rope_dims; V4: 576)
//     [0, nope_dims)                     e4m3fn codes of the non-RoPE values
//     [nope_dims, data_bytes)            the RoPE values as little-endian BF16
//   scales = base + rows_per_block * data_bytes + t * scale_bytes
//     [0, scale_count)                   E8M0 scale of value block j (values [64 j, 64 j + 64))
//     [scale_count, scale_bytes)         zero padding (scale_bytes = scale_count rounded up to 8)
//   the rest of the block (block_bytes - rows_per_block * row_bytes) is padding, zero-filled by
//   nobody: readers never look at it.
//
// make_kv_record_layout rounds block_bytes up to a multiple of data_bytes, as FlashMLA requires
// for its TMA descriptors (V4, 64 rows: 64 * 584 = 37376 -> 37440); every data offset is then a
// multiple of 16 (16-byte vector loads). Any layout keeps offsets 8-byte aligned. rows_per_block =
// 1 with block_bytes = row_bytes is the array-of-structures form [codes | rope | scales | pad] that
// some ports use; every function here takes any valid layout.
//
// Value semantics (encode): values [0, nope_dims) are quantized exactly as
// ops::fake_quant_kv_fp8 (block 64) rounds them: per block of 64 (the last may be shorter),
// amax = max |x| ignoring NaN, scale byte = f32_to_e8m0_ceil(max(amax, 1e-4) / 448), s =
// e8m0_to_f32(byte), code = f32_to_e4m3(x / s) (round to nearest even, saturating at 448, NaN ->
// 0x7f). Decode computes e4m3_to_f32(code) * s in f32, which is bit for bit the value
// fake_quant_kv_fp8 leaves in the row (+-inf: s = 2^127, code 448, product inf, as there), except
// in a block holding a NaN: its scale byte is the NaN scale 0xff (k_kv_record_nan_scale), so every
// value of that block decodes to NaN where fake_quant_kv_fp8 leaves NaN at the NaN's place only.
// Attention cannot tell them apart (a NaN anywhere in a key makes its score, and so its query's
// softmax, NaN). Hence codes 0x7f / 0xff (NaN) occur only under scale 0xff: the warp-specialized
// decode reader's conversion relies on it (attention_decode_ws.cuh). The RoPE values are rounded
// to BF16 (RNE; exact for a BF16 pool, a rounding for an f32 one).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsv4 {

// Values per E8M0 scale (the reference's KV block).
constexpr int64_t k_kv_record_quant_block = 64;
// The scale byte of a block holding a NaN (E8M0's NaN).
constexpr uint8_t k_kv_record_nan_scale = 0xff;

struct kv_record_layout {
  int64_t nope_dims = 448;  // FP8 part; a multiple of 16 (16-byte aligned RoPE part)
  int64_t rope_dims = 64;   // BF16 part; a multiple of 8
  int64_t rows_per_block = 64;
  int64_t block_bytes = 0;  // >= rows_per_block * row_bytes(), a multiple of 8

  constexpr int64_t data_bytes() const { return nope_dims + 2 * rope_dims; }
  constexpr int64_t width() const { return nope_dims + rope_dims; }  // values per row
  constexpr int64_t scale_count() const {
    return (nope_dims + k_kv_record_quant_block - 1) / k_kv_record_quant_block;
  }
  constexpr int64_t scale_bytes() const { return (scale_count() + 7) / 8 * 8; }
  constexpr int64_t row_bytes() const { return data_bytes() + scale_bytes(); }
  constexpr int64_t data_offset(int64_t row) const {
    return row / rows_per_block * block_bytes + row % rows_per_block * data_bytes();
  }
  constexpr int64_t scale_offset(int64_t row) const {
    return row / rows_per_block * block_bytes + rows_per_block * data_bytes() +
           row % rows_per_block * scale_bytes();
  }
  // Bytes of a pool of `rows` rows (whole blocks).
  constexpr int64_t pool_bytes(int64_t rows) const {
    return (rows + rows_per_block - 1) / rows_per_block * block_bytes;
  }
};

// The FlashMLA-compatible layout: block_bytes = rows_per_block * row_bytes rounded up to a
// multiple of data_bytes. Throws on dims that break the alignment rules above.
kv_record_layout make_kv_record_layout(int64_t nope_dims, int64_t rope_dims,
                                       int64_t rows_per_block);

// Record pools of the KV cache (model/layer_cache.h): a u8 tensor [blocks, block_bytes] of
// make_kv_record_layout(width - k_kv_cache_record_rope_dims, k_kv_cache_record_rope_dims,
// rows_per_block), rows_per_block the cache's block size. The RoPE part is DeepSeek-V4's 64 dims;
// a pool's layout follows from the row width and block_bytes alone (rows_per_block =
// block_bytes / row_bytes, since the FlashMLA rounding adds less than one row).
constexpr int64_t k_kv_cache_record_rope_dims = 64;
kv_record_layout kv_cache_record_layout(int64_t width, int64_t rows_per_block);
// The layout of a cache record pool of rows `width` values wide and `block_bytes` per block;
// throws unless it is exactly kv_cache_record_layout(width, rows_per_block) for some block size.
kv_record_layout kv_cache_record_layout_of(int64_t width, int64_t block_bytes);

// Throws (with the offending field) unless the layout satisfies the rules above.
void check_kv_record_layout(const kv_record_layout& layout);

// Encodes the layout.width() values at x into record `row` of `pool` (scale padding zeroed).
void kv_record_encode(const kv_record_layout& layout, const float* x, uint8_t* pool, int64_t row);

// Decodes record `row` of `pool` into layout.width() values at out.
void kv_record_decode(const kv_record_layout& layout, const uint8_t* pool, int64_t row, float* out);

// For i < count: r = rows[i]; r = -1 is skipped, any other r outside [0, pool_rows) throws.
// Encodes x[i * x_stride ...] into record r (pack: the cache-write scatter).
void kv_record_pack(const kv_record_layout& layout, const float* x, int64_t x_stride,
                    const int32_t* rows, int64_t count, uint8_t* pool, int64_t pool_rows);

// For i < count: out[i * out_stride ...] = decode(record rows[i]); r = -1 gives zeros, any other r
// outside [0, pool_rows) throws (gather: what attention reads).
void kv_record_gather(const kv_record_layout& layout, const uint8_t* pool, int64_t pool_rows,
                      const int32_t* rows, int64_t count, float* out, int64_t out_stride);

}  // namespace dsv4
