// The FP4 indexer key (io/indexer_fp4_key.h): code positions worked out by hand and every nibble
// of a row owned by exactly one dim; the stored bit order a bijection that gives the pairs back;
// decode(encode(x)) against an independent quantizer (scale from log2 in double, nearest e2m1 value
// by search with ties to the even code); rows that the CPU backend's hadamard_fp4 produced are
// fixed points (encode(decode) gives the same bytes and decode gives the row back bit for bit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "io/indexer_fp4_key.h"

namespace dsv4 {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(indexer_fp4_key, code_positions) {
  // Word 0 of lane quad 0: pair 0 = dims 0, 1 at bits 12..15 and 28..31 (bytes 1 and 3, high
  // nibbles); pair 1 = dims 8, 9 at bits 8..11, 24..27; pair 2 = dims 16, 17 at bits 4..7;
  // pair 3 = dims 24, 25 at bits 0..3, 16..19. Lane quad 1 starts at byte 16 (dims 2, 3, ...);
  // word 1 holds dims 32.. (block 1).
  const auto at = [](int dim) {
    const indexer_fp4_position p = indexer_fp4_code_position(dim);
    return std::pair<int, int>{p.byte, p.shift};
  };
  EXPECT_EQ(at(0), (std::pair<int, int>{1, 4}));
  EXPECT_EQ(at(1), (std::pair<int, int>{3, 4}));
  EXPECT_EQ(at(8), (std::pair<int, int>{1, 0}));
  EXPECT_EQ(at(9), (std::pair<int, int>{3, 0}));
  EXPECT_EQ(at(16), (std::pair<int, int>{0, 4}));
  EXPECT_EQ(at(24), (std::pair<int, int>{0, 0}));
  EXPECT_EQ(at(25), (std::pair<int, int>{2, 0}));
  EXPECT_EQ(at(2), (std::pair<int, int>{17, 4}));
  EXPECT_EQ(at(32), (std::pair<int, int>{5, 4}));
  EXPECT_EQ(at(127), (std::pair<int, int>{16 * 3 + 4 * 3 + 2, 0}));
  std::vector<int> owner(128, -1);
  for (int dim = 0; dim < 128; ++dim) {
    const indexer_fp4_position p = indexer_fp4_code_position(dim);
    ASSERT_TRUE(p.byte >= 0 && p.byte < 64 && (p.shift == 0 || p.shift == 4));
    const int nibble = 2 * p.byte + p.shift / 4;
    EXPECT_EQ(owner[size_t(nibble)], -1) << "dims " << owner[size_t(nibble)] << " and " << dim;
    owner[size_t(nibble)] = dim;
    // Every dim of word w (bytes 16 t + 4 w ..) lies in scale block w.
    EXPECT_EQ((p.byte % 16) / 4, dim / 32);
  }
}

// The stored bit order (IDX24): every bit of a logical word goes to its own stored bit, the six
// masked terms of indexer_fp4_stored_pair give back the logical pairs (written out here as the
// old two-shift, two-mask widening), indexer_fp4_load_word inverts the store, and two words
// worked out by hand.
TEST(indexer_fp4_key, stored_bit_order) {
  uint32_t hit = 0;
  for (int k = 0; k < 32; ++k) {
    const uint32_t u = indexer_fp4_store_word(uint32_t{1} << k);
    ASSERT_EQ(__builtin_popcount(u), 1) << "bit " << k;
    EXPECT_EQ(hit & u, 0u) << "bit " << k;
    hit |= u;
  }
  EXPECT_EQ(hit, 0xffffffffu);
  std::mt19937 gen(3);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t w = i < 16 ? uint32_t(0x11111111u * uint32_t(i)) : uint32_t(gen());
    const uint32_t u = indexer_fp4_store_word(w);
    ASSERT_EQ(indexer_fp4_load_word(u), w);
    for (int p = 0; p < 4; ++p) {
      const uint32_t x = w << (4 * p);
      const uint32_t want = (x & 0x80008000u) | ((x >> 6) & 0x01C001C0u);
      ASSERT_EQ(indexer_fp4_stored_pair(u, p), want) << "word " << w << " pair " << p;
    }
  }
  // Dim 0's code 0xF (logical bits 12..15): pair 0 = 0x81C0, stored at rotr(0x81C0, 6) = 0x0207.
  // Dim 24's code 0xF (logical bits 0..3): pair 3 = 0x81C0, stored as it is.
  EXPECT_EQ(indexer_fp4_store_word(0x0000F000u), 0x00000207u);
  EXPECT_EQ(indexer_fp4_store_word(0x0000000Fu), 0x000081C0u);
}

// Independent quantizer: the e2m1 value nearest to y (ties to the even code), saturating at 6.
double e2m1_nearest(double y) {
  static const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::fabs(y);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(grid[c] - a), db = std::fabs(grid[best] - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return std::copysign(grid[best], y);
}

TEST(indexer_fp4_key, decode_of_encode_is_the_official_rounding) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-30, 30);
  for (int row = 0; row < 400; ++row) {
    float x[128];
    for (int b = 0; b < 4; ++b) {
      const float mag = std::ldexp(1.0f, e(gen));
      for (int j = 0; j < 32; ++j) x[32 * b + j] = u(gen) * mag;
      if (row % 7 == 0) {  // e2m1 ties at scale 1: amax 6 pins the scale
        for (int j = 0; j < 32; ++j) x[32 * b + j] = float(int(gen() % 25) - 12) * 0.25f;
        x[32 * b] = 6.0f;
      }
    }
    if (row % 11 == 0)
      for (int j = 0; j < 32; ++j) x[j] = j % 2 ? -0.0f : 0.0f;  // zero block: scale 2^-126
    if (row % 13 == 0)
      for (int j = 32; j < 64; ++j) x[j] = std::ldexp(u(gen), -140);  // below the scale floor
    uint8_t codes[64];
    uint32_t scales = 0;
    indexer_fp4_key_encode(x, codes, &scales);
    float y[128];
    indexer_fp4_key_decode(codes, scales, y);
    for (int b = 0; b < 4; ++b) {
      double amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, double(std::fabs(x[32 * b + j])));
      const double floor = 6.0 * std::ldexp(1.0, -126);
      const int k = int(std::ceil(std::log2(std::max(amax, floor) / 6.0)));
      EXPECT_EQ(int((scales >> (8 * b)) & 0xff), k + 127) << "row " << row << " block " << b;
      for (int j = 0; j < 32; ++j) {
        const int d = 32 * b + j;
        const float want = float(e2m1_nearest(std::ldexp(double(x[d]), -k)) * std::ldexp(1.0, k));
        EXPECT_EQ(bits_of(y[d]), bits_of(want)) << "row " << row << " dim " << d << " x " << x[d];
      }
    }
  }
}

TEST(indexer_fp4_key, hadamard_fp4_rows_are_fixed_points) {
  std::mt19937 gen(11);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const int64_t rows = 64;
  tensor t = tensor::empty(dtype::f32, {rows, 128});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(gen);
  cpu::cpu_ops o;
  o.hadamard_fp4(t, 1, 128);
  for (int64_t r = 0; r < rows; ++r) {
    const float* k = t.data<float>() + r * 128;
    uint8_t codes[64], again[64];
    uint32_t scales = 0, again_scales = 0;
    indexer_fp4_key_encode(k, codes, &scales);
    float y[128];
    indexer_fp4_key_decode(codes, scales, y);
    for (int d = 0; d < 128; ++d) ASSERT_EQ(bits_of(y[d]), bits_of(k[d])) << "row " << r;
    indexer_fp4_key_encode(y, again, &again_scales);
    EXPECT_EQ(std::memcmp(codes, again, 64), 0);
    EXPECT_EQ(scales, again_scales);
  }
}

}  // namespace
}  // namespace dsv4
