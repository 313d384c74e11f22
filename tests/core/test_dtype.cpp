// Every bit pattern of the 8- and 4-bit types and of bf16/f16, and the rounding ties of every
// encoder. References are computed independently of src/core/dtype.cpp: by the formulas of the
// formats with std::pow in double, and (f16) by the compiler's _Float16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dtype.h"
#include "core/error.h"

namespace dsv4 {
namespace {

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

double e4m3_reference(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  const double mag = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}

TEST(dtype, e4m3_decodes_every_code) {
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_to_f32(uint8_t(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << c;
      continue;
    }
    EXPECT_EQ(double(v), e4m3_reference(c)) << c;
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
}

TEST(dtype, e4m3_round_trips_and_rounds_ties_to_even) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    const uint8_t back = f32_to_e4m3(e4m3_to_f32(uint8_t(c)));
    if (c == 0x80)
      EXPECT_EQ(back, 0x80);  // -0 keeps its sign
    else
      EXPECT_EQ(back, c) << c;
  }
  // Midpoints between neighbours go to the even code; anything off the midpoint goes to the
  // nearer one.
  for (int c = 0; c < 0x7e; ++c) {
    const double lo = e4m3_reference(c), hi = e4m3_reference(c + 1);
    const float mid = float((lo + hi) / 2);
    ASSERT_EQ(double(mid), (lo + hi) / 2);  // exact in f32
    EXPECT_EQ(f32_to_e4m3(mid), (c % 2 == 0) ? c : c + 1) << c;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 1e9f)), c + 1) << c;
    EXPECT_EQ(f32_to_e4m3(-mid), 0x80 | ((c % 2 == 0) ? c : c + 1)) << c;
  }
  EXPECT_EQ(f32_to_e4m3(1e6f), 0x7e);  // saturates
  EXPECT_EQ(f32_to_e4m3(-1e6f), 0xfe);
  EXPECT_EQ(f32_to_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(f32_to_e4m3(NAN), 0x7f);
  EXPECT_EQ(f32_to_e4m3(1e-30f), 0x00);
}

TEST(dtype, e8m0_every_code_and_the_ceiling_rule) {
  for (int c = 0; c < 255; ++c) {
    EXPECT_EQ(double(e8m0_to_f32(uint8_t(c))), std::pow(2.0, c - 127)) << c;
    EXPECT_EQ(f32_to_e8m0_ceil(e8m0_to_f32(uint8_t(c))), c) << c;  // powers of two are exact
    if (c < 254) {
      // Anything above a power of two takes the next exponent (2^ceil(log2 x)).
      const float above = std::nextafter(e8m0_to_f32(uint8_t(c)), INFINITY);
      EXPECT_EQ(f32_to_e8m0_ceil(above), c + 1) << c;
    }
  }
  EXPECT_TRUE(std::isnan(e8m0_to_f32(0xff)));
  EXPECT_EQ(f32_to_e8m0_ceil(448.0f / 448.0f), 127);
  EXPECT_EQ(f32_to_e8m0_ceil(3.0f), 129);  // 4 = 2^2
  EXPECT_EQ(f32_to_e8m0_ceil(NAN), 0xff);
}

TEST(dtype, e2m1_every_code_ties_and_packing) {
  const double table[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) {
    const double want = (c & 8) ? -table[c & 7] : table[c & 7];
    EXPECT_EQ(double(e2m1_to_f32(uint8_t(c))), want) << c;
    if (c != 8) {
      EXPECT_EQ(f32_to_e2m1(e2m1_to_f32(uint8_t(c))), c) << c;
    }
  }
  // Ties go to the even code: 0.25->0, 0.75->1.0, 1.25->1.0, 1.75->2, 2.5->2, 3.5->4, 5->4.
  // {midpoint, even code it rounds to, upper neighbour taken just above it}
  const int ties[][3] = {{25, 0, 1},  {75, 2, 2},  {125, 2, 3}, {175, 4, 4},
                         {250, 4, 5}, {350, 6, 6}, {500, 6, 7}};
  for (auto [hundredths, even, upper] : ties) {
    const float v = float(hundredths) / 100.0f;
    EXPECT_EQ(f32_to_e2m1(v), even) << v;
    EXPECT_EQ(f32_to_e2m1(-v), even | 8) << v;
    EXPECT_EQ(f32_to_e2m1(std::nextafter(v, 100.0f)), upper) << v;
    EXPECT_EQ(f32_to_e2m1(std::nextafter(v, 0.0f)), upper - 1) << v;
  }
  EXPECT_EQ(f32_to_e2m1(100.0f), 7);
  EXPECT_EQ(f32_to_e2m1(-100.0f), 15);
  // Element 2i is the low nibble, 2i+1 the high one.
  const uint8_t packed[2] = {0x21, 0xf3};
  EXPECT_EQ(e2m1_get(packed, 0), 1);
  EXPECT_EQ(e2m1_get(packed, 1), 2);
  EXPECT_EQ(e2m1_get(packed, 2), 3);
  EXPECT_EQ(e2m1_get(packed, 3), 15);
  float out[4];
  convert_to_f32(dtype::e2m1, packed, out, 4);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[3], -6.0f);
}

TEST(dtype, bf16_every_pattern_and_ties) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float v = bf16_to_f32(uint16_t(b));
    EXPECT_EQ(bits_of(v), b << 16) << b;
    if (!std::isnan(v))
      EXPECT_EQ(f32_to_bf16(v), b) << b;
    else
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(v)))) << b;
  }
  const float ulp = std::ldexp(1.0f, -7);                                   // bf16 spacing at 1
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + ulp / 2)), 1.0f);                // tie to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3 * ulp / 2)), 1.0f + 2 * ulp);  // tie to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(std::nextafter(1.0f + ulp / 2, 2.0f))), 1.0f + ulp);
}

TEST(dtype, f16_every_pattern_and_rounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float v = f16_to_f32(uint16_t(b));
    const int e = (b >> 10) & 31, m = b & 1023;
    if (e == 31) {
      EXPECT_TRUE(m ? std::isnan(v) : std::isinf(v)) << b;
      continue;
    }
    const double mag = e == 0 ? m * std::pow(2.0, -24) : (1 + m / 1024.0) * std::pow(2.0, e - 15);
    EXPECT_EQ(double(v), (b & 0x8000) ? -mag : mag) << b;
    EXPECT_EQ(f32_to_f16(v), b) << b;
  }
#ifdef __FLT16_MAX__
  // Random floats across the whole f16 range (normals, subnormals, overflow) against the
  // compiler's round-to-nearest-even conversion.
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = any(rng);
    u = (u & 0x80000000u) | ((0x30000000u + (u & 0x0fffffffu)) & 0x7fffffffu);  // |v| ~ 2^-31..2^32
    float v;
    std::memcpy(&v, &u, 4);
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    ASSERT_EQ(f32_to_f16(v), hb) << v;
  }
#endif
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // tie between 2^-24 and 2^-23: even
}

TEST(dtype, names_and_sizes) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f8_e4m3, dtype::f8_e8m0, dtype::e2m1,
                  dtype::i8, dtype::u8, dtype::i32, dtype::i64, dtype::f64, dtype::boolean})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_FALSE(dtype_from_name("F12").has_value());
  EXPECT_EQ(dtype_bytes(dtype::e2m1, 8), 4u);
  EXPECT_EQ(dtype_bytes(dtype::bf16, 3), 6u);
  EXPECT_THROW(dtype_bytes(dtype::e2m1, 3), error);
}

}  // namespace
}  // namespace dsv4
