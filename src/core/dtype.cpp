#include "core/dtype.h"

#include <array>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace dsv4 {

namespace {

uint32_t f32_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

float f32_from_bits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Round-to-nearest-even onto a small sign-magnitude format, given the ascending table of its
// non-negative finite values indexed by code. Adjacent codes alternate in their lowest bit, so a
// tie goes to the even code. Values past the largest finite saturate to it. Midpoints between
// neighbours of these tiny formats are exact in f32, so the comparisons are exact.
template <size_t N>
uint8_t encode_small_float(float value, const std::array<float, N>& magnitudes, uint8_t sign_bit) {
  const bool negative = std::signbit(value);
  const float a = std::fabs(value);
  size_t lo = 0;
  size_t hi = N - 1;
  if (a >= magnitudes[N - 1]) {
    lo = N - 1;
  } else {
    // find largest code with magnitude <= a
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (magnitudes[mid] <= a)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (lo + 1 < N) {
      const float midpoint = (magnitudes[lo] + magnitudes[lo + 1]) * 0.5f;
      if (a > midpoint || (a == midpoint && (lo & 1))) lo = lo + 1;
    }
  }
  return uint8_t(lo | (negative ? sign_bit : 0));
}

std::array<float, 127> make_e4m3_magnitudes() {
  std::array<float, 127> t{};
  for (int c = 0; c < 127; ++c) t[c] = e4m3_to_f32(uint8_t(c));
  return t;
}

const std::array<float, 8> k_e2m1_magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

int dtype_bits(dtype t) {
  switch (t) {
    case dtype::f32:
      return 32;
    case dtype::f16:
      return 16;
    case dtype::bf16:
      return 16;
    case dtype::f8_e4m3:
      return 8;
    case dtype::f8_e8m0:
      return 8;
    case dtype::e2m1:
      return 4;
    case dtype::i8:
      return 8;
    case dtype::u8:
      return 8;
    case dtype::i32:
      return 32;
    case dtype::i64:
      return 64;
    case dtype::f64:
      return 64;
    case dtype::boolean:
      return 8;
  }
  return 0;
}

size_t dtype_bytes(dtype t, int64_t n) {
  DSV4_CHECK(n >= 0, "negative element count {}", n);
  const int bits = dtype_bits(t);
  DSV4_CHECK((n * bits) % 8 == 0, "{} elements of {} do not fill whole bytes", n, dtype_name(t));
  return size_t(n) * size_t(bits) / 8;
}

std::string_view dtype_name(dtype t) {
  switch (t) {
    case dtype::f32:
      return "F32";
    case dtype::f16:
      return "F16";
    case dtype::bf16:
      return "BF16";
    case dtype::f8_e4m3:
      return "F8_E4M3";
    case dtype::f8_e8m0:
      return "F8_E8M0";
    case dtype::e2m1:
      return "F4";
    case dtype::i8:
      return "I8";
    case dtype::u8:
      return "U8";
    case dtype::i32:
      return "I32";
    case dtype::i64:
      return "I64";
    case dtype::f64:
      return "F64";
    case dtype::boolean:
      return "BOOL";
  }
  return "?";
}

std::optional<dtype> dtype_from_name(std::string_view name) {
  static constexpr dtype all[] = {dtype::f32,     dtype::f16,  dtype::bf16, dtype::f8_e4m3,
                                  dtype::f8_e8m0, dtype::e2m1, dtype::i8,   dtype::u8,
                                  dtype::i32,     dtype::i64,  dtype::f64,  dtype::boolean};
  for (dtype t : all)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

float bf16_to_f32(uint16_t bits) {
  return f32_from_bits(uint32_t(bits) << 16);
}

uint16_t f32_to_bf16(float value) {
  const uint32_t u = f32_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return uint16_t((u + rounding) >> 16);
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t man = bits & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    const float mag = std::ldexp(float(man), -24);  // subnormal: man * 2^-24, exact
    return sign ? -mag : mag;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t f32_to_f16(float value) {
  const uint32_t u = f32_bits(value);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Subnormal range: scale to units of 2^-24 (exact in f32) and round to nearest even. 1024
    // units is the smallest normal, which the bit pattern 0x400 already encodes.
    const float units = f32_from_bits(a) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(units)));
  }
  uint32_t half = ((((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu));
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return uint16_t(sign | half);
}

float e4m3_to_f32(uint8_t bits) {
  const int exp = (bits >> 3) & 0xf;
  const int man = bits & 0x7;
  const bool negative = bits & 0x80;
  float mag;
  if (exp == 0xf && man == 0x7) return std::nanf("");
  if (exp == 0)
    mag = std::ldexp(float(man), -9);
  else
    mag = std::ldexp(1.0f + float(man) / 8.0f, exp - 7);
  return negative ? -mag : mag;
}

uint8_t f32_to_e4m3(float value) {
  static const std::array<float, 127> magnitudes = make_e4m3_magnitudes();
  if (std::isnan(value)) return 0x7f;
  return encode_small_float(value, magnitudes, 0x80);
}

float e8m0_to_f32(uint8_t bits) {
  if (bits == 0xff) return std::nanf("");
  return std::ldexp(1.0f, int(bits) - 127);
}

uint8_t f32_to_e8m0_ceil(float value) {
  if (std::isnan(value)) return 0xff;
  if (!(value > 0.0f)) return 0x00;
  if (std::isinf(value)) return 254;
  int e = 0;
  const float m = std::frexp(value, &e);  // value = m * 2^e, m in [0.5, 1)
  int exponent = (m == 0.5f) ? e - 1 : e;
  if (exponent < -127) exponent = -127;
  if (exponent > 127) exponent = 127;
  return uint8_t(exponent + 127);
}

float e2m1_to_f32(uint8_t nibble) {
  const float mag = k_e2m1_magnitudes[nibble & 0x7];
  return (nibble & 0x8) ? -mag : mag;
}

uint8_t f32_to_e2m1(float value) {
  if (std::isnan(value)) return 0x7;
  return encode_small_float(value, k_e2m1_magnitudes, 0x8);
}

void convert_to_f32(dtype from, const void* src, float* dst, int64_t n) {
  switch (from) {
    case dtype::f32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case dtype::f16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case dtype::bf16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case dtype::f8_e4m3: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = e4m3_to_f32(s[i]);
      return;
    }
    case dtype::f8_e8m0: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = e8m0_to_f32(s[i]);
      return;
    }
    case dtype::e2m1: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = e2m1_to_f32(e2m1_get(s, i));
      return;
    }
    case dtype::i8: {
      const auto* s = static_cast<const int8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case dtype::u8:
    case dtype::boolean: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case dtype::i32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case dtype::i64: {
      const auto* s = static_cast<const int64_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case dtype::f64: {
      const auto* s = static_cast<const double*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
  }
  fail("convert_to_f32: unsupported dtype {}", dtype_name(from));
}

}  // namespace dsv4
