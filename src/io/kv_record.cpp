// The FP8 KV record on the CPU (layout and value rules in kv_record.h). The scale and element
// casts are the ones cpu::fake_quant_fp8_values uses, so decode(encode(x)) reproduces
// fake_quant_kv_fp8 bit for bit.
#include "io/kv_record.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace dsv4 {

void check_kv_record_layout(const kv_record_layout& l) {
  DSV4_CHECK(l.nope_dims >= 0 && l.nope_dims % 16 == 0,
             "kv record: nope_dims {} must be a non-negative multiple of 16", l.nope_dims);
  DSV4_CHECK(l.rope_dims >= 0 && l.rope_dims % 8 == 0,
             "kv record: rope_dims {} must be a non-negative multiple of 8", l.rope_dims);
  DSV4_CHECK(l.width() > 0, "kv record: a row needs at least one value");
  DSV4_CHECK(l.rows_per_block > 0, "kv record: rows_per_block {} must be positive",
             l.rows_per_block);
  DSV4_CHECK(l.block_bytes >= l.rows_per_block * l.row_bytes() && l.block_bytes % 8 == 0,
             "kv record: block_bytes {} must be a multiple of 8 holding {} rows of {} bytes",
             l.block_bytes, l.rows_per_block, l.row_bytes());
}

kv_record_layout make_kv_record_layout(int64_t nope_dims, int64_t rope_dims,
                                       int64_t rows_per_block) {
  kv_record_layout l;
  l.nope_dims = nope_dims;
  l.rope_dims = rope_dims;
  l.rows_per_block = rows_per_block;
  l.block_bytes = 8;  // placeholder so that the dim checks below report the dims
  if (nope_dims >= 0 && rope_dims >= 0 && rows_per_block > 0 && l.data_bytes() > 0) {
    const int64_t used = rows_per_block * l.row_bytes();
    l.block_bytes = (used + l.data_bytes() - 1) / l.data_bytes() * l.data_bytes();
  }
  check_kv_record_layout(l);
  return l;
}

kv_record_layout kv_cache_record_layout(int64_t width, int64_t rows_per_block) {
  DSV4_CHECK(width > k_kv_cache_record_rope_dims,
             "kv cache records: rows of {} values (needs more than the {} RoPE dims)", width,
             k_kv_cache_record_rope_dims);
  return make_kv_record_layout(width - k_kv_cache_record_rope_dims, k_kv_cache_record_rope_dims,
                               rows_per_block);
}

kv_record_layout kv_cache_record_layout_of(int64_t width, int64_t block_bytes) {
  kv_record_layout l;
  l.nope_dims = width - k_kv_cache_record_rope_dims;
  l.rope_dims = k_kv_cache_record_rope_dims;
  DSV4_CHECK(
      width > k_kv_cache_record_rope_dims && l.nope_dims % 16 == 0 && block_bytes >= l.row_bytes(),
      "kv cache records: a block of {} bytes is no record block for rows of {} values", block_bytes,
      width);
  const kv_record_layout want = kv_cache_record_layout(width, block_bytes / l.row_bytes());
  DSV4_CHECK(want.block_bytes == block_bytes,
             "kv cache records: a block of {} bytes is no record block for rows of {} values "
             "({} rows would take {} bytes)",
             block_bytes, width, want.rows_per_block, want.block_bytes);
  return want;
}

void kv_record_encode(const kv_record_layout& l, const float* x, uint8_t* pool, int64_t row) {
  uint8_t* data = pool + l.data_offset(row);
  uint8_t* scales = pool + l.scale_offset(row);
  for (int64_t j = 0; j < l.scale_count(); ++j) {
    const int64_t b = j * k_kv_record_quant_block;
    const int64_t e = std::min(l.nope_dims, b + k_kv_record_quant_block);
    float amax = 0.0f;
    bool nan = false;
    for (int64_t i = b; i < e; ++i) {
      amax = std::fmax(amax, std::fabs(x[i]));  // NaN ignored
      nan = nan || std::isnan(x[i]);
    }
    const uint8_t scale = f32_to_e8m0_ceil(std::fmax(amax, 1e-4f) / 448.0f);
    const float s = e8m0_to_f32(scale);
    for (int64_t i = b; i < e; ++i) data[i] = f32_to_e4m3(x[i] / s);
    scales[j] = nan ? k_kv_record_nan_scale : scale;  // kv_record.h: a NaN poisons its block
  }
  std::memset(scales + l.scale_count(), 0, size_t(l.scale_bytes() - l.scale_count()));
  for (int64_t i = 0; i < l.rope_dims; ++i) {
    const uint16_t bits = f32_to_bf16(x[l.nope_dims + i]);
    std::memcpy(data + l.nope_dims + 2 * i, &bits, 2);  // little-endian host, as the GPU
  }
}

void kv_record_decode(const kv_record_layout& l, const uint8_t* pool, int64_t row, float* out) {
  const uint8_t* data = pool + l.data_offset(row);
  const uint8_t* scales = pool + l.scale_offset(row);
  for (int64_t i = 0; i < l.nope_dims; ++i)
    out[i] = e4m3_to_f32(data[i]) * e8m0_to_f32(scales[i / k_kv_record_quant_block]);
  for (int64_t i = 0; i < l.rope_dims; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + l.nope_dims + 2 * i, 2);
    out[l.nope_dims + i] = bf16_to_f32(bits);
  }
}

namespace {

void check_rows(const kv_record_layout& l, const int32_t* rows, int64_t count, int64_t pool_rows,
                const char* what) {
  check_kv_record_layout(l);
  DSV4_CHECK(count >= 0 && pool_rows >= 0, "{}: {} rows for a pool of {}", what, count, pool_rows);
  for (int64_t i = 0; i < count; ++i)
    DSV4_CHECK(rows[i] >= -1 && rows[i] < pool_rows, "{}: entry {} names row {} of a pool of {}",
               what, i, rows[i], pool_rows);
}

}  // namespace

void kv_record_pack(const kv_record_layout& l, const float* x, int64_t x_stride,
                    const int32_t* rows, int64_t count, uint8_t* pool, int64_t pool_rows) {
  check_rows(l, rows, count, pool_rows, "kv_record_pack");
  DSV4_CHECK(x_stride >= l.width(), "kv_record_pack: stride {} < row width {}", x_stride,
             l.width());
  for (int64_t i = 0; i < count; ++i)
    if (rows[i] >= 0) kv_record_encode(l, x + i * x_stride, pool, rows[i]);
}

void kv_record_gather(const kv_record_layout& l, const uint8_t* pool, int64_t pool_rows,
                      const int32_t* rows, int64_t count, float* out, int64_t out_stride) {
  check_rows(l, rows, count, pool_rows, "kv_record_gather");
  DSV4_CHECK(out_stride >= l.width(), "kv_record_gather: stride {} < row width {}", out_stride,
             l.width());
  for (int64_t i = 0; i < count; ++i) {
    float* o = out + i * out_stride;
    if (rows[i] >= 0)
      kv_record_decode(l, pool, rows[i], o);
    else
      std::fill(o, o + l.width(), 0.0f);
  }
}

}  // namespace dsv4
