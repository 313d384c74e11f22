// NVFP4 quantizer: against the independent numpy oracle (scripts/nvfp4_oracle.py ->
// tests/fixtures/nvfp4/oracle.safetensors: Gaussian blocks over 17 binades incl. zero and
// underflowing blocks, exact ties, an MXFP4 tensor with exponents at and beyond the exact range),
// and properties checked by brute force: every representable value round-trips, the chosen code is
// the nearest dequantized value (ties to even), MXFP4 converts exactly within 17 binades, errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/linear_weight.h"
#include "io/nvfp4_checkpoint.h"
#include "io/nvfp4_quantizer.h"
#include "io/safetensors.h"

namespace dsv4 {
namespace {

const std::string k_oracle = std::string(DSV4_TEST_DATA_DIR) + "/nvfp4/oracle.safetensors";

std::vector<uint8_t> bytes_of(const safetensors_file& f, const std::string& name) {
  const safetensors_entry* e = f.find(name);
  if (e == nullptr) throw error("oracle: missing " + name);
  const tensor_view v = f.view(*e);
  const auto* p = static_cast<const uint8_t*>(v.data);
  return {p, p + (e->end - e->begin)};
}

float scalar_of(const safetensors_file& f, const std::string& name) {
  const std::vector<uint8_t> b = bytes_of(f, name);
  float v = 0;
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}

// An independent decode of one code (bit layouts from dtype.h), f32 ops in the documented order.
float ref_value(uint8_t code, uint8_t scale, float g) {
  static const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const int e = (scale >> 3) & 0xf, m = scale & 7;
  const float s = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  const float v = (magnitudes[code & 7] * s) * g;
  return (code & 8) ? -v : v;
}

TEST(nvfp4_quantizer, matches_the_oracle) {
  const auto f = safetensors_file::open(k_oracle);
  for (const std::string name : {"gaussian", "ties"}) {
    const safetensors_entry* in = f->find(name + ".input");
    ASSERT_NE(in, nullptr) << name;
    const tensor_view x = f->view(*in);
    const int64_t out = x.shape[0], cols = x.shape[1];
    const std::vector<uint8_t> raw = bytes_of(*f, name + ".input");
    std::vector<float> values(size_t(out * cols));
    std::memcpy(values.data(), raw.data(), raw.size());
    const float g = nvfp4_global_scale(nvfp4_amax(values.data(), out * cols, name));
    EXPECT_EQ(g, scalar_of(*f, name + ".global_scale")) << name;
    const nvfp4_matrix m = quantize_nvfp4(values.data(), out, cols, g, name);
    const std::vector<uint8_t> codes = bytes_of(*f, name + ".codes");
    const std::vector<uint8_t> scales = bytes_of(*f, name + ".scales");
    ASSERT_EQ(m.codes.size(), codes.size());
    ASSERT_EQ(m.scales.size(), scales.size());
    int64_t code_mismatch = 0, scale_mismatch = 0;
    for (size_t i = 0; i < codes.size(); ++i) code_mismatch += m.codes[i] != codes[i];
    for (size_t i = 0; i < scales.size(); ++i) scale_mismatch += m.scales[i] != scales[i];
    EXPECT_EQ(code_mismatch, 0) << name;
    EXPECT_EQ(scale_mismatch, 0) << name;
  }
}

TEST(nvfp4_quantizer, ties_go_to_the_even_code_and_rounding_is_nearest) {
  // g = 1 and s = 1: the dequantized magnitudes are the e2m1 values themselves.
  const float g = 1.0f;
  const uint8_t s = f32_to_e4m3(1.0f);
  const std::pair<float, uint8_t> cases[] = {{0.25f, 0},   {0.75f, 2}, {1.25f, 2}, {1.75f, 4},
                                             {2.5f, 4},    {3.5f, 6},  {5.0f, 6},  {2.6f, 5},
                                             {3.6f, 6},    {5.1f, 7},  {0.26f, 1}, {7.0f, 7},
                                             {-1.25f, 10}, {-0.1f, 0}, {-0.0f, 0}, {-5.0f, 14}};
  for (const auto& [x, code] : cases) EXPECT_EQ(nvfp4_encode(x, s, g), code) << x;
  // A zero block scale encodes everything as +0.
  EXPECT_EQ(nvfp4_encode(3.0f, 0, g), 0);
}

TEST(nvfp4_quantizer, chosen_code_is_the_nearest_dequantized_value) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-20, 4);
  const int64_t out = 64, in = 256;
  std::vector<float> x(size_t(out * in));
  for (int64_t b = 0; b < out * in / 16; ++b) {
    const float scale = std::ldexp(1.0f, binade(rng));
    for (int64_t i = 0; i < 16; ++i) x[size_t(b * 16 + i)] = normal(rng) * scale;
  }
  const float g = nvfp4_global_scale(nvfp4_amax(x.data(), out * in, "x"));
  const nvfp4_matrix m = quantize_nvfp4(x.data(), out, in, g, "x");
  int64_t checked = 0;
  for (int64_t i = 0; i < out * in; ++i) {
    const uint8_t s = m.scales[size_t(i / 16)];
    const uint8_t code = e2m1_get(m.codes.data(), i);
    // Block scale rule, restated: nearest-even e4m3 of (amax16 / g) / 6.
    if (i % 16 == 0) {
      float amax = 0;
      for (int64_t j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[size_t(i + j)]));
      ASSERT_EQ(s, f32_to_e4m3((amax / g) / 6.0f)) << i;
    }
    if (s == 0) {
      EXPECT_EQ(code, 0) << i;
      continue;
    }
    const double chosen = std::fabs(double(ref_value(code, s, g)) - double(x[size_t(i)]));
    for (uint8_t c = 0; c < 16; ++c) {
      const double d = std::fabs(double(ref_value(c, s, g)) - double(x[size_t(i)]));
      ASSERT_LE(chosen, d) << "element " << i << " code " << int(code) << " vs " << int(c);
      if (d == chosen && (c & 7) != (code & 7) && ref_value(c, s, g) != ref_value(code, s, g)) {
        ASSERT_EQ(code & 1, 0) << "tie not to even at " << i;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, out * in / 2);
}

TEST(nvfp4_quantizer, every_representable_value_round_trips) {
  // Each block holds 6 * s * g (which makes the block scale s again) and all 16 codes; every
  // finite non-negative e4m3 scale s, for power-of-two and arbitrary global scales.
  for (const float g : {1.0f, std::ldexp(1.0f, -12), 32.0f, 0.37193f, 3.1e-5f}) {
    std::vector<float> x;
    std::vector<uint8_t> want;
    for (uint8_t s = 1; s < 0x7f; ++s) {
      x.push_back(ref_value(7, s, g));
      want.push_back(7);
      for (uint8_t c = 0; c < 15; ++c) {
        const uint8_t code = c == 8 ? 0 : c;  // -0 is written as +0
        x.push_back(ref_value(c, s, g));
        want.push_back(code);
      }
    }
    const int64_t rows = int64_t(x.size()) / 16;
    const nvfp4_matrix m = quantize_nvfp4(x.data(), rows, 16, g, "grid");
    std::vector<float> back(x.size());
    dequantize_nvfp4(m, back.data());
    int64_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      wrong += back[i] != x[i];
      wrong += e2m1_get(m.codes.data(), int64_t(i)) != want[i];
    }
    EXPECT_EQ(wrong, 0) << "g " << g;
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(m.scales[size_t(r)], uint8_t(r + 1)) << g;
  }
}

TEST(nvfp4_quantizer, design_global_scale_maps_the_amax_to_6_times_448) {
  std::vector<float> x(32, 0.01f);
  x[5] = -3.25f;
  const float amax = nvfp4_amax(x.data(), 32, "x");
  EXPECT_EQ(amax, 3.25f);
  const float g = nvfp4_global_scale(amax);
  EXPECT_EQ(g, 3.25f / 2688.0f);
  const nvfp4_matrix m = quantize_nvfp4(x.data(), 1, 32, g, "x");
  EXPECT_EQ(e4m3_to_f32(m.scales[0]), 448.0f);
  EXPECT_EQ(e2m1_get(m.codes.data(), 5), 0xf);  // -6
  std::vector<float> back(32);
  dequantize_nvfp4(m, back.data());
  EXPECT_NEAR(back[5], -3.25f, 3.25f * 1e-6f);
  // An all-zero tensor: the design's floor 1e-8 keeps g finite; every code and scale is 0.
  std::vector<float> zeros(64, 0.0f);
  const float gz = nvfp4_global_scale(nvfp4_amax(zeros.data(), 64, "z"));
  EXPECT_EQ(gz, 1e-8f / 2688.0f);
  const nvfp4_matrix z = quantize_nvfp4(zeros.data(), 2, 32, gz, "z");
  for (uint8_t b : z.codes) EXPECT_EQ(b, 0);
  for (uint8_t b : z.scales) EXPECT_EQ(b, 0);
}

TEST(nvfp4_quantizer, non_finite_input_and_bad_shapes_are_errors_naming_the_tensor) {
  std::vector<float> x(32, 1.0f);
  x[17] = std::nanf("");
  try {
    quantize_nvfp4(x.data(), 1, 32, 1.0f, "layers.3.ffn.experts.1.w2");
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.3.ffn.experts.1.w2: NaN at element 17"),
              std::string::npos)
        << e.what();
  }
  x[17] = -INFINITY;
  EXPECT_THROW(nvfp4_amax(x.data(), 32, "t"), error);
  x[17] = 1.0f;
  EXPECT_THROW(quantize_nvfp4(x.data(), 2, 24, 1.0f, "t"), error);  // in % 16 != 0
  EXPECT_THROW(quantize_nvfp4(x.data(), 1, 32, 0.0f, "t"), error);  // invalid global scale
}

TEST(nvfp4_quantizer, mxfp4_conversion_matches_the_oracle) {
  const auto f = safetensors_file::open(k_oracle);
  const std::vector<uint8_t> codes = bytes_of(*f, "mxfp4.source_codes");
  const std::vector<uint8_t> e8 = bytes_of(*f, "mxfp4.source_scales");
  const tensor_view shape = f->view(*f->find("mxfp4.source_scales"));
  const int64_t out = shape.shape[0], in = shape.shape[1] * 32;
  const mxfp4_source src{codes.data(), e8.data(), out, in};
  const float g = mxfp4_global_scale(mxfp4_max_exponent(src, "mxfp4"));
  EXPECT_EQ(g, scalar_of(*f, "mxfp4.global_scale"));
  const mxfp4_conversion c = convert_mxfp4_to_nvfp4(src, g, "mxfp4");
  EXPECT_EQ(c.matrix.codes, bytes_of(*f, "mxfp4.codes"));
  EXPECT_EQ(c.matrix.scales, bytes_of(*f, "mxfp4.scales"));
  const std::vector<uint8_t> exact = bytes_of(*f, "mxfp4.exact_blocks");
  int64_t oracle_inexact = 0;
  for (uint8_t b : exact) oracle_inexact += b == 0;
  EXPECT_GT(oracle_inexact, 0);  // the fixture has half-groups beyond the exact range
  EXPECT_EQ(c.inexact_blocks, oracle_inexact);
  EXPECT_GE(c.requantized, c.inexact_blocks);
  // Exact blocks dequantize bit for bit to the MXFP4 values.
  std::vector<float> back(size_t(out * in));
  dequantize_nvfp4(c.matrix, back.data());
  for (int64_t i = 0; i < out * in; ++i) {
    if (!exact[size_t(i / 16)]) continue;
    const float want =
        e2m1_to_f32(e2m1_get(codes.data(), i)) * std::ldexp(1.0f, int(e8[size_t(i / 32)]) - 127);
    ASSERT_EQ(back[size_t(i)], want) << i;
  }
}

// Random MXFP4 tensors: exponents spanning exactly 18 binades convert exactly; 19 do not.
TEST(nvfp4_quantizer, mxfp4_is_exact_within_17_binades_of_the_largest_exponent) {
  std::mt19937 rng(11);
  for (const int span : {1, 10, 18, 19, 40}) {
    const int64_t out = 32, in = 256;
    std::vector<uint8_t> codes(size_t(out * in / 2)), e8(size_t(out * in / 32));
    std::uniform_int_distribution<int> byte(0, 255), exponent(0, span - 1);
    for (auto& b : codes) b = uint8_t(byte(rng));
    for (auto& b : e8) b = uint8_t(127 - 20 + exponent(rng));
    e8[0] = uint8_t(127 - 20 + span - 1);  // both ends of the span present, with nonzero codes
    e8[1] = uint8_t(127 - 20);
    for (int i = 0; i < 32; ++i) codes[size_t(i)] = 0x77;
    const mxfp4_source src{codes.data(), e8.data(), out, in};
    const int32_t emax = mxfp4_max_exponent(src, "m");
    EXPECT_EQ(emax, span - 1 - 20);
    const mxfp4_conversion c = convert_mxfp4_to_nvfp4(src, mxfp4_global_scale(emax), "m");
    std::vector<float> back(size_t(out * in));
    dequantize_nvfp4(c.matrix, back.data());
    int64_t differ = 0;
    for (int64_t i = 0; i < out * in; ++i)
      differ += back[size_t(i)] !=
                e2m1_to_f32(e2m1_get(codes.data(), i)) * e8m0_to_f32(e8[size_t(i / 32)]);
    if (span <= 18) {
      EXPECT_EQ(c.requantized, 0) << span;
      EXPECT_EQ(c.inexact_blocks, 0) << span;
      EXPECT_EQ(differ, 0) << span;
    } else {
      EXPECT_GT(c.requantized, 0) << span;
      EXPECT_GT(differ, 0) << span;
    }
  }
  // A NaN scale is an error; a non-power-of-two global scale is refused.
  std::vector<uint8_t> codes(16, 0x11), e8(1, 0xff);
  EXPECT_THROW(mxfp4_max_exponent({codes.data(), e8.data(), 1, 32}, "m"), error);
  e8[0] = 127;
  EXPECT_THROW(convert_mxfp4_to_nvfp4({codes.data(), e8.data(), 1, 32}, 0.3f, "m"), error);
}

// The converter's own decoders (tables, threads) feed the quantizer the values dequantize_to_f32
// gives, for FP8 with F32 (weight_scale_inv) and E8M0 scales, MXFP4 and BF16; w1 (MXFP4) and w3
// (BF16) of an expert share the amax-rule global scale since they are not both MXFP4.
TEST(nvfp4_checkpoint, converted_modules_equal_the_quantizer_on_dequantized_sources) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("dsv4_nvfp4_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::ofstream(dir / "in" / "config.json") << "{}";
  std::ofstream(dir / "in" / "tokenizer.json") << "{\"x\": 1}";
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<tensor> owned;
  safetensors_writer w;
  auto add = [&](const std::string& name, dtype type, const dims& shape, auto fill) {
    owned.push_back(tensor::empty(type, shape));
    auto* p = static_cast<uint8_t*>(owned.back().view().data);
    for (size_t i = 0; i < owned.back().view().bytes(); ++i) p[i] = fill(i);
    w.add(name, owned.back().view());
  };
  auto random_byte = [&](size_t) { return uint8_t(byte(rng)); };
  auto finite_e4m3 = [&](size_t) {  // no NaN codes (0x7f / 0xff)
    uint8_t b = uint8_t(byte(rng));
    return (b & 0x7f) == 0x7f ? uint8_t(b - 1) : b;
  };
  add("layers.0.attn.wq_a.weight", dtype::f8_e4m3, {160, 144}, finite_e4m3);
  owned.push_back(tensor::empty(dtype::f32, {2, 2}));
  for (int i = 0; i < 4; ++i) owned.back().data<float>()[i] = 0.01f * float(i + 1);
  w.add("layers.0.attn.wq_a.weight_scale_inv", owned.back().view());
  add("layers.0.attn.wo_b.weight", dtype::f8_e4m3, {64, 32}, finite_e4m3);
  add("layers.0.attn.wo_b.scale", dtype::f8_e8m0, {1, 1}, [](size_t) { return uint8_t(120); });
  add("layers.0.ffn.experts.0.w1.weight", dtype::i8, {48, 32}, random_byte);
  add("layers.0.ffn.experts.0.w1.scale", dtype::f8_e8m0, {48, 2},
      [&](size_t) { return uint8_t(120 + byte(rng) % 8); });
  add("layers.0.ffn.experts.0.w3.weight", dtype::bf16, {48, 64},
      [&](size_t i) { return i % 2 ? uint8_t(0x3c + byte(rng) % 4) : random_byte(i); });
  add("layers.0.attn_norm.weight", dtype::bf16, {64}, random_byte);
  w.write((dir / "in" / "model.safetensors").string());

  nvfp4_convert_options o;
  o.in_dir = (dir / "in").string();
  o.out_dir = (dir / "out").string();
  o.scope = nvfp4_scope::all_linear;
  int64_t reports = 0;
  const nvfp4_convert_result r =
      convert_checkpoint_to_nvfp4(o, [&](const nvfp4_module_report&) { ++reports; });
  EXPECT_EQ(r.quantized, 4);
  EXPECT_EQ(reports, 4);
  EXPECT_EQ(r.tensors_copied, 1);
  EXPECT_TRUE(fs::exists(dir / "out" / "tokenizer.json"));

  const checkpoint in = checkpoint::open(o.in_dir);
  const checkpoint out = checkpoint::open(o.out_dir);
  auto source = [&](const std::string& base, int64_t rows, int64_t cols) {
    return dequantize_to_f32(find_linear(in, base, rows, cols));
  };
  const tensor w1 = source("layers.0.ffn.experts.0.w1", 48, 64);
  const tensor w3 = source("layers.0.ffn.experts.0.w3", 48, 64);
  const float shared = nvfp4_global_scale(std::max(nvfp4_amax(w1.data<float>(), w1.numel(), "w1"),
                                                   nvfp4_amax(w3.data<float>(), w3.numel(), "w3")));
  struct expected_module {
    std::string base;
    tensor values;
    float global_scale;
  };
  const tensor wq_a = source("layers.0.attn.wq_a", 160, 144);
  const tensor wo_b = source("layers.0.attn.wo_b", 64, 32);
  const std::vector<expected_module> modules = {
      {"layers.0.attn.wq_a", wq_a,
       nvfp4_global_scale(nvfp4_amax(wq_a.data<float>(), wq_a.numel(), "wq_a"))},
      {"layers.0.attn.wo_b", wo_b,
       nvfp4_global_scale(nvfp4_amax(wo_b.data<float>(), wo_b.numel(), "wo_b"))},
      {"layers.0.ffn.experts.0.w1", w1, shared},
      {"layers.0.ffn.experts.0.w3", w3, shared}};
  for (const expected_module& m : modules) {
    const nvfp4_matrix want = quantize_nvfp4(m.values.data<float>(), m.values.size(0),
                                             m.values.size(1), m.global_scale, m.base);
    const tensor_view codes = out.view(m.base + ".weight");
    const tensor_view scales = out.view(m.base + ".weight_scale");
    float g = 0;
    std::memcpy(&g, out.view(m.base + ".weight_scale_2").data, 4);
    EXPECT_EQ(g, m.global_scale) << m.base;
    ASSERT_EQ(codes.bytes(), want.codes.size()) << m.base;
    EXPECT_EQ(std::memcmp(codes.data, want.codes.data(), want.codes.size()), 0) << m.base;
    EXPECT_EQ(std::memcmp(scales.data, want.scales.data(), want.scales.size()), 0) << m.base;
    EXPECT_FALSE(out.has(m.base + ".scale"));
    EXPECT_FALSE(out.has(m.base + ".weight_scale_inv"));
    EXPECT_EQ(find_linear(out, m.base, m.values.size(0), m.values.size(1)).format,
              weight_format::nvfp4);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dsv4
