// The FP8 KV record (io/kv_record.h): byte offsets against FlashMLA's MODEL1 formulas worked out
// by hand, every byte of a block owned by exactly one row, and decode(encode(x)) bit for bit
// equal to the CPU backend's fake_quant_kv_fp8 on rows with zeros, f32 subnormals, huge values,
// infinities, NaN and every e4m3 tie; scales against log2 in double; pack / gather contracts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "io/kv_record.h"

namespace dsv4 {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Bitwise equality, any NaN equal to any NaN.
bool same_value(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b);
}

TEST(kv_record, v4_layout_matches_flashmla_model1) {
  // FlashMLA tests/quant.py, MODEL1: bytes_per_token = 448 + 2 * 64 + 7 + 1 = 584; a block is
  // block_size * 576 bytes of codes + rope, then block_size * 8 bytes of scales, padded up to a
  // multiple of 576 (64 rows: 37376 -> 65 * 576 = 37440; 128 rows: 74752 -> 130 * 576 = 74880).
  const kv_record_layout l = make_kv_record_layout(448, 64, 64);
  EXPECT_EQ(l.data_bytes(), 576);
  EXPECT_EQ(l.scale_count(), 7);
  EXPECT_EQ(l.scale_bytes(), 8);
  EXPECT_EQ(l.row_bytes(), 584);
  EXPECT_EQ(l.width(), 512);
  EXPECT_EQ(l.block_bytes, 37440);
  EXPECT_EQ(l.data_offset(0), 0);
  EXPECT_EQ(l.data_offset(1), 576);
  EXPECT_EQ(l.data_offset(63), 63 * 576);
  EXPECT_EQ(l.scale_offset(0), 64 * 576);
  EXPECT_EQ(l.scale_offset(5), 64 * 576 + 40);
  EXPECT_EQ(l.data_offset(64), 37440);
  EXPECT_EQ(l.scale_offset(65), 37440 + 64 * 576 + 8);
  EXPECT_EQ(l.pool_bytes(65), 2 * 37440);
  EXPECT_EQ(make_kv_record_layout(448, 64, 128).block_bytes, 74880);
  // The array-of-structures form: [codes 448 | rope 128 | scales 7 | pad 1] per row.
  const kv_record_layout aos{448, 64, 1, 584};
  EXPECT_NO_THROW(check_kv_record_layout(aos));
  EXPECT_EQ(aos.data_offset(3), 3 * 584);
  EXPECT_EQ(aos.scale_offset(3), 3 * 584 + 576);
}

TEST(kv_record, bad_layouts_throw) {
  EXPECT_THROW(make_kv_record_layout(440, 64, 64), error);  // nope not a multiple of 16
  EXPECT_THROW(make_kv_record_layout(448, 60, 64), error);  // rope not a multiple of 8
  EXPECT_THROW(make_kv_record_layout(448, 64, 0), error);
  EXPECT_THROW(make_kv_record_layout(0, 0, 4), error);
  EXPECT_THROW(check_kv_record_layout(kv_record_layout{448, 64, 64, 64 * 584 - 16}), error);
  EXPECT_THROW(check_kv_record_layout(kv_record_layout{448, 64, 1, 588}), error);  // not 8 | 588
}

// The cache's record pools: the layout follows from the row width and block_bytes for every
// block size (the engine's 128 rows: 130 data rows of 576 bytes = 74880 bytes per block).
TEST(kv_record, cache_pool_layout_round_trips_through_block_bytes) {
  EXPECT_EQ(kv_cache_record_layout(512, 128).block_bytes, 74880);
  for (int64_t width : {int64_t(512), int64_t(80), int64_t(128)})
    for (int64_t rows = 1; rows <= 300; ++rows) {
      const kv_record_layout l = kv_cache_record_layout(width, rows);
      const kv_record_layout back = kv_cache_record_layout_of(width, l.block_bytes);
      ASSERT_EQ(back.rows_per_block, rows) << width;
      ASSERT_EQ(back.block_bytes, l.block_bytes);
      ASSERT_EQ(back.nope_dims, width - 64);
      ASSERT_EQ(back.rope_dims, 64);
    }
  EXPECT_THROW(kv_cache_record_layout_of(512, 74880 + 8), error);  // no block of that size
  EXPECT_THROW(kv_cache_record_layout_of(512, 100), error);        // under one row
  EXPECT_THROW(kv_cache_record_layout(64, 128), error);            // no non-RoPE part
  EXPECT_THROW(kv_cache_record_layout_of(72, 74880), error);       // nope 8: not 16 | 8
}

// Every byte of each row's data and scale ranges belongs to that row alone, inside its block,
// for the V4, fixture-sized, all-nope and array-of-structures layouts.
TEST(kv_record, rows_own_disjoint_bytes) {
  const kv_record_layout layouts[] = {make_kv_record_layout(448, 64, 64),
                                      make_kv_record_layout(16, 16, 128),
                                      make_kv_record_layout(32, 0, 3),
                                      {448, 64, 1, 592}};
  for (const kv_record_layout& l : layouts) {
    const int64_t rows = 2 * l.rows_per_block + 1;
    std::vector<int> owner(size_t(l.pool_bytes(rows)), -1);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t block_end = (r / l.rows_per_block + 1) * l.block_bytes;
      auto claim = [&](int64_t begin, int64_t n) {
        ASSERT_LE(begin + n, block_end) << "row " << r;
        for (int64_t i = begin; i < begin + n; ++i) {
          ASSERT_EQ(owner[size_t(i)], -1) << "byte " << i << " of row " << r;
          owner[size_t(i)] = int(r);
        }
      };
      claim(l.data_offset(r), l.data_bytes());
      claim(l.scale_offset(r), l.scale_bytes());
    }
  }
}

// Rows of width nope + rope; per block of 64 a random magnitude 2^[-40, 40], special rows and
// blocks: zeros, f32 subnormals, huge values up to FLT_MAX, +-inf, NaN, values under the 1e-4
// floor, and every e4m3 grid value and midpoint under a block max of 448 (s = 1, exact ties).
std::vector<float> kv_rows(std::mt19937& gen, int64_t rows, int64_t nope, int64_t rope,
                           bool bf16_rope) {
  const int64_t w = nope + rope;
  std::vector<float> x(size_t(rows * w));
  std::uniform_int_distribution<int> mag(-40, 40);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < w; b += 64) {
      const float m = std::ldexp(1.0f, mag(gen));
      for (int64_t i = b; i < std::min(w, b + 64); ++i) x[size_t(r * w + i)] = u(gen) * m;
    }
  std::vector<float> ties;
  for (int c = 0; c < 126; ++c) {
    const float a = e4m3_to_f32(uint8_t(c)), b = e4m3_to_f32(uint8_t(c + 1));
    ties.insert(ties.end(), {a, (a + b) * 0.5f, -a, -(a + b) * 0.5f});
  }
  const float big = std::numeric_limits<float>::max();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  size_t k = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * w;
    switch (r % 8) {
      case 0:  // e4m3 ties, each block led by 448
        for (int64_t i = 0; i < nope; ++i) row[i] = i % 64 == 0 ? 448.0f : ties[k++ % ties.size()];
        break;
      case 1:  // zeros of both signs
        for (int64_t i = 0; i < w; ++i) row[i] = i % 2 ? -0.0f : 0.0f;
        break;
      case 2:  // f32 subnormals (under the 1e-4 floor: s = 2^-22, codes 0)
        for (int64_t i = 0; i < w; ++i) row[i] = std::ldexp(u(gen), -130);
        break;
      case 3:  // huge: FLT_MAX and neighbours (s = 2^119 .. 2^120)
        for (int64_t i = 0; i < w; ++i) row[i] = u(gen) * big;
        row[0] = big;
        row[1] = -big;
        break;
      case 4:  // one inf and one NaN per block, the rest finite
        for (int64_t i = 0; i < nope; i += 64) {
          row[i + 3] = (i / 64) % 2 ? -inf : inf;
          row[i + 7] = nan;
        }
        if (rope > 1) {
          row[nope] = nan;
          row[nope + 1] = -inf;
        }
        break;
      case 5:  // an all-NaN block (amax 0 -> the 1e-4 floor)
        for (int64_t i = 0; i < std::min<int64_t>(nope, 64); ++i) row[i] = nan;
        break;
      case 6:  // just under the floor, and blocks near 448 * 2^k boundaries
        for (int64_t i = 0; i < nope; ++i)
          row[i] = i < 64 ? 0.9e-4f * u(gen) : std::nextafter(448.0f, 0.0f) * u(gen);
        break;
      default:
        break;
    }
  }
  if (bf16_rope)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = nope; i < w; ++i)
        x[size_t(r * w + i)] = bf16_to_f32(f32_to_bf16(x[size_t(r * w + i)]));
  return x;
}

// decode(encode(x)) against fake_quant_kv_fp8 applied to the same rows of an f32 pool.
void expect_round_trip_matches_fake_quant(const kv_record_layout& l, int64_t rows, bool bf16_rope,
                                          unsigned seed) {
  std::mt19937 gen(seed);
  const int64_t w = l.width();
  const std::vector<float> x = kv_rows(gen, rows, l.nope_dims, l.rope_dims, bf16_rope);

  cpu::cpu_ops o;
  tensor pool = tensor::empty(dtype::f32, {rows, w});
  std::copy(x.begin(), x.end(), pool.data<float>());
  tensor list = tensor::empty(dtype::i32, {rows});
  for (int64_t r = 0; r < rows; ++r) list.data<int32_t>()[r] = int32_t(r);
  o.fake_quant_kv_fp8(pool, list, l.nope_dims, 64);

  std::vector<uint8_t> records(size_t(l.pool_bytes(rows)), 0xA5);
  // Encode in reverse pool order through a permuted row list (the scatter).
  std::vector<int32_t> order(static_cast<size_t>(rows));
  std::vector<float> permuted(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    order[size_t(i)] = int32_t(rows - 1 - i);
    std::copy_n(x.data() + (rows - 1 - i) * w, w, permuted.data() + i * w);
  }
  kv_record_pack(l, permuted.data(), w, order.data(), rows, records.data(), rows);

  std::vector<float> back(size_t(rows * w));
  kv_record_gather(l, records.data(), rows, list.data<int32_t>(), rows, back.data(), w);
  // A block holding a NaN decodes to NaN throughout (kv_record.h); fake_quant_kv_fp8 keeps the
  // NaN at its place.
  auto nan_block = [&](int64_t r, int64_t i) {
    const int64_t b = i / 64 * 64, e = std::min(l.nope_dims, b + 64);
    for (int64_t k = b; k < e; ++k)
      if (std::isnan(x[size_t(r * w + k)])) return true;
    return false;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < w; ++i) {
      const float want = i >= l.nope_dims  ? bf16_to_f32(f32_to_bf16(x[size_t(r * w + i)]))
                         : nan_block(r, i) ? nan
                                           : pool.data<float>()[r * w + i];
      const float got = back[size_t(r * w + i)];
      if (!same_value(got, want) && bad++ < 5)
        ADD_FAILURE() << "row " << r << " dim " << i << ": got " << got << " want " << want;
    }
  EXPECT_EQ(bad, 0);
  // With BF16 RoPE inputs the whole row is what the official mode leaves in the pool (NaN blocks
  // aside).
  if (bf16_rope)
    for (int64_t i = 0; i < rows * w; ++i)
      if (!(i % w < l.nope_dims && nan_block(i / w, i % w)) &&
          !same_value(back[size_t(i)], pool.data<float>()[i])) {
        ADD_FAILURE() << "element " << i;
        break;
      }
}

TEST(kv_record, round_trip_equals_fake_quant_kv_fp8_v4) {
  expect_round_trip_matches_fake_quant(make_kv_record_layout(448, 64, 64), 200, true, 1);
  expect_round_trip_matches_fake_quant(make_kv_record_layout(448, 64, 128), 130, false, 2);
  expect_round_trip_matches_fake_quant(kv_record_layout{448, 64, 1, 592}, 17, true, 3);
}

TEST(kv_record, round_trip_equals_fake_quant_kv_fp8_small_and_ragged) {
  // The fixture model's rows (16 nope + 16 rope), a short last block (80 = 64 + 16), no rope.
  expect_round_trip_matches_fake_quant(make_kv_record_layout(16, 16, 128), 40, true, 4);
  expect_round_trip_matches_fake_quant(make_kv_record_layout(80, 8, 5), 23, false, 5);
  expect_round_trip_matches_fake_quant(make_kv_record_layout(32, 0, 4), 9, true, 6);
}

// Scale bytes against 127 + ceil(log2(max(amax, 1e-4) / 448)) in double, NaN ignored in amax, 255
// for a block holding a NaN; the padding byte is zero.
TEST(kv_record, scales_are_the_power_of_two_rule) {
  const kv_record_layout l = make_kv_record_layout(448, 64, 64);
  std::mt19937 gen(7);
  const int64_t rows = 64;
  const std::vector<float> x = kv_rows(gen, rows, 448, 64, true);
  std::vector<uint8_t> records(size_t(l.pool_bytes(rows)), 0xA5);
  for (int64_t r = 0; r < rows; ++r) kv_record_encode(l, x.data() + r * 512, records.data(), r);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* sc = records.data() + l.scale_offset(r);
    for (int64_t j = 0; j < 7; ++j) {
      double amax = 0;
      bool nan = false;
      for (int64_t i = 64 * j; i < 64 * j + 64; ++i) {
        const double v = std::fabs(double(x[size_t(r * 512 + i)]));
        if (!std::isnan(v)) amax = std::max(amax, v);
        nan = nan || std::isnan(v);
      }
      const double ratio = std::max(amax, double(1e-4f)) / 448.0;
      const int want = std::isinf(ratio) ? 254 : 127 + int(std::ceil(std::log2(ratio)));
      // A block holding a NaN: the NaN scale byte.
      EXPECT_EQ(int(sc[j]), nan ? 255 : std::min(want, 254)) << "row " << r << " block " << j;
    }
    EXPECT_EQ(sc[7], 0) << "row " << r;
  }
}

TEST(kv_record, pack_skips_minus_one_and_leaves_other_rows_alone) {
  const kv_record_layout l = make_kv_record_layout(16, 16, 4);
  std::mt19937 gen(8);
  const std::vector<float> x = kv_rows(gen, 3, 16, 16, true);
  const int64_t pool_rows = 10;
  std::vector<uint8_t> records(size_t(l.pool_bytes(pool_rows)), 0xA5);
  const int32_t rows[] = {7, -1, 2};
  kv_record_pack(l, x.data(), 32, rows, 3, records.data(), pool_rows);
  std::vector<uint8_t> want(records.size(), 0xA5);
  kv_record_encode(l, x.data(), want.data(), 7);
  kv_record_encode(l, x.data() + 64, want.data(), 2);
  EXPECT_EQ(records, want);  // rows 7 and 2 encoded, every other byte still 0xA5
}

TEST(kv_record, gather_zeros_minus_one_and_rejects_rows_outside_the_pool) {
  const kv_record_layout l = make_kv_record_layout(16, 16, 4);
  std::mt19937 gen(9);
  const std::vector<float> x = kv_rows(gen, 1, 16, 16, true);
  std::vector<uint8_t> records(size_t(l.pool_bytes(6)), 0);
  kv_record_encode(l, x.data(), records.data(), 5);
  const int32_t rows[] = {-1, 5};
  std::vector<float> out(2 * 40, 7.0f);
  kv_record_gather(l, records.data(), 6, rows, 2, out.data(), 40);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(bits_of(out[size_t(i)]), 0u) << i;
  for (int64_t i = 32; i < 40; ++i) EXPECT_EQ(out[size_t(i)], 7.0f) << "stride padding " << i;
  std::vector<float> one(32);
  kv_record_decode(l, records.data(), 5, one.data());
  for (int64_t i = 0; i < 32; ++i) EXPECT_TRUE(same_value(out[size_t(40 + i)], one[size_t(i)]));

  const int32_t past[] = {6};
  const int32_t below[] = {-2};
  EXPECT_THROW(kv_record_gather(l, records.data(), 6, past, 1, out.data(), 40), error);
  EXPECT_THROW(kv_record_gather(l, records.data(), 6, below, 1, out.data(), 40), error);
  EXPECT_THROW(kv_record_pack(l, x.data(), 32, past, 1, records.data(), 6), error);
  EXPECT_THROW(kv_record_gather(l, records.data(), 6, rows, 2, out.data(), 31), error);
}

}  // namespace
}  // namespace dsv4
