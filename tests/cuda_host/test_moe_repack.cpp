// The repacked 4-bit expert layout of src/backends/cuda/moe_repack.h (host reference; the
// kernels decode with the same decode_pairs). Oracles: the E2M1 value table and the fragment
// mapping of fp4_mma.cuh, written out here independently of the code under test.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/cuda/moe_repack.h"

namespace dsv4::cuda::fp4_repack {
namespace {

// E2M1 nibble (sign | e1 e0 m) as a float.
float e2m1_value(uint32_t nibble) {
  static constexpr float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (nibble & 8u) ? -mag[nibble & 7u] : mag[nibble & 7u];
}

float bf16_bits_value(uint32_t bits16) {
  return std::bit_cast<float>(bits16 << 16);
}

// Every value of checkpoint word w decodes, through repack_word + decode_pairs, to
// code * 2^-126 (pair i: low half v_i, high half v_{i + 4}), bit-identical to the checkpoint
// decode, and the word map round-trips.
void expect_word_decodes(uint32_t w) {
  const uint32_t u = repack_word(w);
  ASSERT_EQ(unpack_word(u), w) << std::hex << w;
  ASSERT_EQ(checkpoint_word_of(u), w) << std::hex << w;  // the kernels' inverse
  uint32_t p[4];
  decode_pairs(u, p);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(p[i], checkpoint_pair(w, i)) << std::hex << "w=" << w << " pair " << i;
    const float lo = bf16_bits_value(p[i] & 0xFFFFu), hi = bf16_bits_value(p[i] >> 16);
    const float want_lo = e2m1_value((w >> (4 * i)) & 15u) * 0x1p-126f;
    const float want_hi = e2m1_value((w >> (4 * (i + 4))) & 15u) * 0x1p-126f;
    ASSERT_EQ(lo, want_lo) << std::hex << "w=" << w << " pair " << i;
    ASSERT_EQ(hi, want_hi) << std::hex << "w=" << w << " pair " << i;
    ASSERT_EQ(std::signbit(lo), bool((w >> (4 * i + 3)) & 1u));  // -0 stays -0
  }
}

TEST(moe_repack, every_nibble_at_every_position_decodes_exactly) {
  std::mt19937 rng(7);
  for (int pos = 0; pos < 8; ++pos)
    for (uint32_t n = 0; n < 16; ++n)
      for (int rep = 0; rep < 64; ++rep) {
        const uint32_t w = (rng() & ~(15u << (4 * pos))) | (n << (4 * pos));
        expect_word_decodes(w);
      }
}

TEST(moe_repack, random_words_round_trip_and_decode) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) expect_word_decodes(rng());
  expect_word_decodes(0u);
  expect_word_decodes(0xFFFFFFFFu);
}

TEST(moe_repack, word_map_is_a_bit_permutation) {
  uint32_t seen = 0;
  for (int k = 0; k < 32; ++k) {
    const uint32_t u = repack_word(uint32_t{1} << k);
    ASSERT_EQ(std::popcount(u), 1) << k;
    ASSERT_EQ(seen & u, 0u) << k;
    seen |= u;
  }
  EXPECT_EQ(seen, 0xFFFFFFFFu);
}

// The fragment placement, checked from the repacked side: byte b of a matrix belongs to tile
// b / 1024, row half (b % 1024) / 512, lane (b % 512) / 16 = 4 g + q, word (b % 16) / 4; that
// word must be the repacked checkpoint word of row 16 (tile / tiles_per_row) + g + 8 half,
// columns 128 (tile % tiles_per_row) + 32 q + 8 word .. + 7.
TEST(moe_repack, matrices_follow_the_fragment_mapping_and_round_trip) {
  const int64_t count = 3, rows = 48, cols = 384;
  const int64_t bytes = rows * cols / 2;
  std::vector<uint8_t> src(size_t(count * bytes)), packed(src.size()), back(src.size());
  std::mt19937 rng(3);
  for (auto& b : src) b = uint8_t(rng());
  repack_matrices(src.data(), packed.data(), count, rows, cols);
  unpack_matrices(packed.data(), back.data(), count, rows, cols);
  EXPECT_EQ(back, src);
  EXPECT_NE(packed, src);
  const int64_t tiles_per_row = cols / 128;
  for (int64_t m = 0; m < count; ++m)
    for (int64_t b = 0; b < bytes; b += 4) {
      const int64_t tile = b / 1024, half = (b % 1024) / 512, lane = (b % 512) / 16;
      const int64_t word = (b % 16) / 4, g = lane / 4, q = lane % 4;
      const int64_t row = 16 * (tile / tiles_per_row) + g + 8 * half;
      const int64_t col = 128 * (tile % tiles_per_row) + 32 * q + 8 * word;
      uint32_t w, u;
      std::memcpy(&w, src.data() + m * bytes + row * (cols / 2) + col / 2, 4);
      std::memcpy(&u, packed.data() + m * bytes + b, 4);
      ASSERT_EQ(u, repack_word(w)) << "matrix " << m << " byte " << b;
      ASSERT_EQ(repacked_word_offset(row, col, cols), b);
    }
}

TEST(moe_repack, unsupported_dims_are_rejected) {
  std::vector<uint8_t> a(4096), b(4096);
  EXPECT_FALSE(repack_supported(8, 128));
  EXPECT_FALSE(repack_supported(16, 64));
  EXPECT_FALSE(repack_supported(0, 128));
  EXPECT_TRUE(repack_supported(16, 128));
  EXPECT_THROW(repack_matrices(a.data(), b.data(), 1, 8, 128), std::invalid_argument);
  EXPECT_THROW(unpack_matrices(a.data(), b.data(), 1, 16, 96), std::invalid_argument);
}

}  // namespace
}  // namespace dsv4::cuda::fp4_repack
