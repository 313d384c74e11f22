#include "io/nvfp4_quantizer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4 {

namespace {

constexpr float k_e2m1_max = 6.0f;
constexpr float k_e4m3_max = 448.0f;

// Rows per parallel chunk: enough work per task for small matrices, rows independent.
constexpr int64_t k_min_rows = 8;

// Decoded e4m3 bytes (the scalar decode computes powers with ldexp: too slow per element).
const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[size_t(b)] = e4m3_to_f32(uint8_t(b));
    return t;
  }();
  return table;
}

constexpr std::array<float, 16> k_e2m1_values = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                 4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                 -2.0f, -3.0f, -4.0f, -6.0f};

// Decision points of one block: the 8 dequantized magnitudes and the 7 midpoints between them.
struct block_codebook {
  std::array<float, 8> value{};
  std::array<double, 7> mid{};

  block_codebook(uint8_t scale, float global_scale) {
    for (uint8_t c = 0; c < 8; ++c) value[c] = nvfp4_value(c, scale, global_scale);
    // Midpoint of two floats within a factor of two (or one of them zero): exact in double.
    for (int c = 0; c < 7; ++c) mid[c] = 0.5 * (double(value[c]) + double(value[c + 1]));
  }

  uint8_t encode(float x) const {
    if (value[7] == 0.0f) return 0;  // zero or underflowed block scale
    const double a = std::fabs(double(x));
    uint8_t c = 0;
    while (c < 7 && a > mid[c]) ++c;
    // a == mid[c]: a tie between c and c + 1; keep the even code.
    if (c < 7 && a == mid[c] && (c & 1)) ++c;
    if (c == 0) return 0;
    return std::signbit(x) ? uint8_t(c | 0x8) : c;
  }
};

void check_shape(int64_t out, int64_t in, const std::string& name) {
  DSV4_CHECK(out > 0 && in > 0 && in % k_nvfp4_block == 0,
             "{}: nvfp4 needs in ({}) divisible by {} and a non-empty [out, in] (out {})", name, in,
             k_nvfp4_block, out);
}

bool is_power_of_two(float v) {
  if (!(v > 0.0f) || !std::isfinite(v)) return false;
  int e = 0;
  return std::frexp(v, &e) == 0.5f;
}

// Quantizes one block of 16 values (generic rules) into codes (one per value) and the scale byte.
uint8_t quantize_block(const float* x, float global_scale, uint8_t* codes) {
  float amax = 0;
  for (int64_t i = 0; i < k_nvfp4_block; ++i) amax = std::max(amax, std::fabs(x[i]));
  const uint8_t scale = nvfp4_block_scale(amax, global_scale);
  const block_codebook book(scale, global_scale);
  for (int64_t i = 0; i < k_nvfp4_block; ++i) codes[i] = book.encode(x[i]);
  return scale;
}

void pack(const uint8_t* codes, int64_t n, uint8_t* packed) {
  for (int64_t i = 0; i < n; i += 2) packed[i / 2] = uint8_t(codes[i] | (codes[i + 1] << 4));
}

}  // namespace

float nvfp4_amax(const float* values, int64_t n, const std::string& name) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (!std::isfinite(v))
      fail("{}: {} at element {}: cannot quantize a non-finite weight", name,
           std::isnan(v) ? "NaN" : "Inf", i);
    amax = std::max(amax, std::fabs(v));
  }
  return amax;
}

float nvfp4_global_scale(float amax) {
  return std::max(amax, 1e-8f) / (k_e2m1_max * k_e4m3_max);
}

uint8_t nvfp4_block_scale(float block_amax, float global_scale) {
  const float normalized = block_amax / global_scale;
  return f32_to_e4m3(normalized / k_e2m1_max);  // RNE, saturating at 448
}

float nvfp4_value(uint8_t code, uint8_t scale, float global_scale) {
  return (k_e2m1_values[code & 0xf] * e4m3_table()[scale]) * global_scale;
}

uint8_t nvfp4_encode(float x, uint8_t scale, float global_scale) {
  return block_codebook(scale, global_scale).encode(x);
}

nvfp4_matrix quantize_nvfp4(const float* values, int64_t out, int64_t in, float global_scale,
                            const std::string& name) {
  check_shape(out, in, name);
  DSV4_CHECK(global_scale > 0.0f && std::isfinite(global_scale),
             "{}: invalid nvfp4 global scale {}", name, global_scale);
  nvfp4_matrix m;
  m.out = out;
  m.in = in;
  m.global_scale = global_scale;
  m.codes.resize(size_t(out * in / 2));
  m.scales.resize(size_t(out * in / k_nvfp4_block));
  // Non-finite values fail before anything is written (the message names the first one).
  nvfp4_amax(values, out * in, name);
  thread_pool::global().parallel_for(
      out,
      [&](int64_t begin, int64_t end) {
        std::vector<uint8_t> codes(static_cast<size_t>(in));
        for (int64_t r = begin; r < end; ++r) {
          const float* row = values + r * in;
          for (int64_t b = 0; b < in / k_nvfp4_block; ++b)
            m.scales[size_t(r * (in / k_nvfp4_block) + b)] = quantize_block(
                row + b * k_nvfp4_block, global_scale, codes.data() + b * k_nvfp4_block);
          pack(codes.data(), in, m.codes.data() + r * (in / 2));
        }
      },
      k_min_rows);
  return m;
}

void dequantize_nvfp4(const nvfp4_matrix& m, float* dst) {
  for (int64_t r = 0; r < m.out; ++r)
    for (int64_t c = 0; c < m.in; ++c)
      dst[r * m.in + c] = nvfp4_value(
          e2m1_get(m.codes.data() + r * (m.in / 2), c),
          m.scales[size_t(r * (m.in / k_nvfp4_block) + c / k_nvfp4_block)], m.global_scale);
}

int32_t mxfp4_max_exponent(const mxfp4_source& src, const std::string& name) {
  DSV4_CHECK(src.out > 0 && src.in > 0 && src.in % 32 == 0,
             "{}: mxfp4 needs in ({}) divisible by 32 and a non-empty [out, in] (out {})", name,
             src.in, src.out);
  int32_t emax = INT32_MIN;
  for (int64_t r = 0; r < src.out; ++r)
    for (int64_t g = 0; g < src.in / 32; ++g) {
      const uint8_t s = src.scales[r * (src.in / 32) + g];
      DSV4_CHECK(s != 0xff, "{}: NaN mxfp4 scale (0xff) at row {}, group {}", name, r, g);
      const uint8_t* bytes = src.codes + r * (src.in / 2) + g * 16;
      bool nonzero = false;
      for (int i = 0; i < 16 && !nonzero; ++i) nonzero = (bytes[i] & 0x77) != 0;
      if (nonzero) emax = std::max(emax, int32_t(s) - 127);
    }
  return emax;
}

float mxfp4_global_scale(int32_t max_exponent) {
  if (max_exponent == INT32_MIN) return 1.0f;
  return std::ldexp(1.0f, max_exponent - 8);
}

mxfp4_conversion convert_mxfp4_to_nvfp4(const mxfp4_source& src, float global_scale,
                                        const std::string& name) {
  check_shape(src.out, src.in, name);
  DSV4_CHECK(src.in % 32 == 0, "{}: mxfp4 needs in ({}) divisible by 32", name, src.in);
  DSV4_CHECK(is_power_of_two(global_scale),
             "{}: mxfp4 -> nvfp4 needs a power-of-two global scale, got {}", name, global_scale);
  int k = 0;
  std::frexp(global_scale, &k);
  k -= 1;  // global_scale = 2^k
  const int64_t out = src.out, in = src.in;
  mxfp4_conversion result;
  nvfp4_matrix& m = result.matrix;
  m.out = out;
  m.in = in;
  m.global_scale = global_scale;
  m.codes.assign(src.codes, src.codes + out * in / 2);  // codes stay where the block is exact
  m.scales.resize(size_t(out * in / k_nvfp4_block));
  result.blocks = out * in / k_nvfp4_block;
  std::atomic<int64_t> requantized{0}, inexact{0};
  thread_pool::global().parallel_for(
      out,
      [&](int64_t begin, int64_t end) {
        int64_t local_requantized = 0, local_inexact = 0;
        std::array<float, k_nvfp4_block> values{};
        std::array<uint8_t, k_nvfp4_block> codes{};
        for (int64_t r = begin; r < end; ++r) {
          for (int64_t b = 0; b < in / k_nvfp4_block; ++b) {
            const uint8_t e8 = src.scales[r * (in / 32) + b / 2];
            DSV4_CHECK(e8 != 0xff, "{}: NaN mxfp4 scale (0xff) at row {}, group {}", name, r,
                       b / 2);
            const int e = int(e8) - 127;
            uint8_t* packed = m.codes.data() + r * (in / 2) + b * (k_nvfp4_block / 2);
            uint8_t& scale = m.scales[size_t(r * (in / k_nvfp4_block) + b)];
            bool nonzero = false;
            for (int i = 0; i < k_nvfp4_block / 2; ++i) nonzero |= (packed[i] & 0x77) != 0;
            if (!nonzero) {  // zero codes (either sign): exact with any scale; write +0 codes
              std::fill(packed, packed + k_nvfp4_block / 2, uint8_t(0));
              scale = 0;
              continue;
            }
            const int shift = e - k;  // the block scale 2^shift must be an E4M3 value
            if (shift >= -9 && shift <= 8) {
              scale = f32_to_e4m3(std::ldexp(1.0f, shift));  // exact: a power of two in range
              continue;
            }
            ++local_requantized;
            const float group = e8m0_to_f32(e8);
            for (int64_t i = 0; i < k_nvfp4_block; ++i)
              values[size_t(i)] = e2m1_to_f32(e2m1_get(packed, i)) * group;
            scale = quantize_block(values.data(), global_scale, codes.data());
            pack(codes.data(), k_nvfp4_block, packed);
            for (int64_t i = 0; i < k_nvfp4_block; ++i)
              if (nvfp4_value(codes[size_t(i)], scale, global_scale) != values[size_t(i)]) {
                ++local_inexact;
                break;
              }
          }
        }
        requantized += local_requantized;
        inexact += local_inexact;
      },
      k_min_rows);
  result.requantized = requantized;
  result.inexact_blocks = inexact;
  return result;
}

quantization_error measure_quantization_error(const float* ref, const float* got, int64_t n) {
  double err2 = 0, ref2 = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(got[i]) - double(ref[i]);
    err2 += d * d;
    ref2 += double(ref[i]) * double(ref[i]);
    max_abs = std::max(max_abs, std::fabs(d));
  }
  quantization_error e;
  e.max_abs = max_abs;
  e.sum_squared_error = err2;
  e.sum_squared_reference = ref2;
  e.relative_rms = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0.0);
  return e;
}

}  // namespace dsv4
