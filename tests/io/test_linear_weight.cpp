// Linear weights: the test quantizes random weights itself (encoders from core, decoders written
// here from the format definitions), stores them in a checkpoint, and checks that find_linear
// detects each format and dequantize_to_f32 reproduces decode(code) * scale exactly.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "io/linear_weight.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

// ---- independent decoders (from the bit layouts in dtype.h / dsv4-model.md §2.3-2.4) ----

float ref_e4m3(uint8_t b) {
  const int exponent = (b >> 3) & 0xf;
  const int mantissa = b & 7;
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -9)
                                        : std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - 7);
  return (b & 0x80) ? -magnitude : magnitude;
}

float ref_e8m0(uint8_t b) {
  return std::ldexp(1.0f, int(b) - 127);
}

float ref_e2m1(uint8_t nibble) {
  static const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = magnitudes[nibble & 7];
  return (nibble & 8) ? -m : m;
}

float ref_bf16(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The E8M0 exponent of the smallest power of two >= x (x > 0), computed with frexp.
uint8_t pow2_ceil_e8m0(float x) {
  int e = 0;
  const float m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  const int exponent = m == 0.5f ? e - 1 : e;
  return uint8_t(exponent + 127);
}

std::vector<float> random_weights(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& x : w) x = normal(rng);
  return w;
}

class linear_weight_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dsv4_linear_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  tensor& add(const std::string& name, dtype type, const dims& shape) {
    owned_.push_back(tensor::zeros(type, shape));
    names_.push_back(name);
    return owned_.back();
  }

  const checkpoint& open() {
    safetensors_writer w;
    for (size_t i = 0; i < owned_.size(); ++i) w.add(names_[i], owned_[i].view());
    w.write((fs::path(dir_) / "model.safetensors").string());
    ckpt_ = checkpoint::open(dir_);
    return ckpt_;
  }

  // find_linear throws a dsv4::error mentioning every fragment.
  void expect_linear_error(const std::string& canonical, int64_t out, int64_t in,
                           std::initializer_list<std::string> fragments) {
    try {
      find_linear(ckpt_, canonical, out, in);
      ADD_FAILURE() << "no error for " << canonical;
    } catch (const error& e) {
      const std::string message = e.what();
      for (const auto& f : fragments)
        EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
    }
  }

  std::string dir_;
  std::deque<tensor> owned_;
  std::vector<std::string> names_;
  checkpoint ckpt_;
};

// Writes an fp8 block-quantized [out, in] weight under `base` and returns the expected values.
std::vector<float> make_fp8(tensor& weight, tensor& scale, int64_t out, int64_t in,
                            std::mt19937& rng) {
  const auto w = random_weights(out * in, rng);
  const int64_t scale_cols = (in + 127) / 128;
  std::vector<float> expected(w.size());
  auto* codes = weight.data<uint8_t>();
  for (int64_t br = 0; br < (out + 127) / 128; ++br)
    for (int64_t bc = 0; bc < scale_cols; ++bc) {
      float amax = 1e-12f;
      for (int64_t r = br * 128; r < std::min(out, br * 128 + 128); ++r)
        for (int64_t c = bc * 128; c < std::min(in, bc * 128 + 128); ++c)
          amax = std::max(amax, std::fabs(w[r * in + c]));
      float s = 0;
      if (scale.type() == dtype::f8_e8m0) {
        const uint8_t code = pow2_ceil_e8m0(amax / 448.0f);
        scale.data<uint8_t>()[br * scale_cols + bc] = code;
        s = ref_e8m0(code);
      } else {
        s = amax / 448.0f;
        scale.data<float>()[br * scale_cols + bc] = s;
      }
      for (int64_t r = br * 128; r < std::min(out, br * 128 + 128); ++r)
        for (int64_t c = bc * 128; c < std::min(in, bc * 128 + 128); ++c) {
          const uint8_t code = f32_to_e4m3(w[r * in + c] / s);
          codes[r * in + c] = code;
          expected[r * in + c] = ref_e4m3(code) * s;
        }
    }
  return expected;
}

void expect_same(const tensor& got, const std::vector<float>& expected, int64_t out, int64_t in) {
  ASSERT_EQ(got.type(), dtype::f32);
  ASSERT_EQ(got.shape(), (dims{out, in}));
  int64_t mismatches = 0;
  for (int64_t i = 0; i < out * in; ++i)
    if (got.data<float>()[i] != expected[size_t(i)]) ++mismatches;
  EXPECT_EQ(mismatches, 0);
}

TEST_F(linear_weight_test, fp8_block_e8m0_and_f32_scales) {
  std::mt19937 rng(1);
  // Partial edge blocks in both dimensions.
  const int64_t out = 200, in = 300;
  tensor& w = add("layers.0.attn.wq_a.weight", dtype::f8_e4m3, {out, in});
  tensor& s = add("layers.0.attn.wq_a.scale", dtype::f8_e8m0, {2, 3});
  const auto expected = make_fp8(w, s, out, in, rng);
  // transformers module spelling with an F32 weight_scale_inv.
  tensor& w2 = add("model.layers.1.self_attn.q_b_proj.weight", dtype::f8_e4m3, {out, in});
  tensor& s2 = add("model.layers.1.self_attn.q_b_proj.weight_scale_inv", dtype::f32, {2, 3});
  const auto expected2 = make_fp8(w2, s2, out, in, rng);
  open();

  const linear_weight a = find_linear(ckpt_, "layers.0.attn.wq_a", out, in);
  EXPECT_EQ(a.format, weight_format::fp8_block);
  EXPECT_EQ(a.name, "layers.0.attn.wq_a.weight");
  EXPECT_EQ(a.scale.type, dtype::f8_e8m0);
  expect_same(dequantize_to_f32(a), expected, out, in);

  const linear_weight b = find_linear(ckpt_, "layers.1.attn.wq_b", out, in);
  EXPECT_EQ(b.format, weight_format::fp8_block);
  EXPECT_EQ(b.scale.type, dtype::f32);
  expect_same(dequantize_to_f32(b), expected2, out, in);
  EXPECT_EQ(weight_format_name(b.format), "fp8_block");
}

TEST_F(linear_weight_test, mxfp4_packed_i8) {
  std::mt19937 rng(2);
  const int64_t out = 12, in = 96;
  const auto w = random_weights(out * in, rng);
  tensor& q = add("layers.2.ffn.experts.7.w2.weight", dtype::i8, {out, in / 2});
  tensor& s = add("layers.2.ffn.experts.7.w2.scale", dtype::f8_e8m0, {out, in / 32});
  std::vector<float> expected(w.size());
  for (int64_t r = 0; r < out; ++r)
    for (int64_t b = 0; b < in / 32; ++b) {
      float amax = 1e-12f;
      for (int64_t c = b * 32; c < b * 32 + 32; ++c)
        amax = std::max(amax, std::fabs(w[r * in + c]));
      const uint8_t sc = pow2_ceil_e8m0(amax / 6.0f);
      s.data<uint8_t>()[r * (in / 32) + b] = sc;
      for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
        const uint8_t code = f32_to_e2m1(w[r * in + c] / ref_e8m0(sc));
        uint8_t& byte = q.data<uint8_t>()[r * (in / 2) + c / 2];
        byte |= (c % 2 == 0) ? code : uint8_t(code << 4);  // even element in the low nibble
        expected[r * in + c] = ref_e2m1(code) * ref_e8m0(sc);
      }
    }
  open();
  const linear_weight l = find_linear(ckpt_, "layers.2.ffn.experts.7.w2", out, in);
  EXPECT_EQ(l.format, weight_format::mxfp4);
  EXPECT_EQ(l.weight.shape, (dims{out, in / 2}));
  expect_same(dequantize_to_f32(l), expected, out, in);
}

TEST_F(linear_weight_test, nvfp4_with_global_and_input_scale) {
  std::mt19937 rng(3);
  const int64_t out = 10, in = 64;
  const auto w = random_weights(out * in, rng);
  float amax = 0;
  for (float x : w) amax = std::max(amax, std::fabs(x));
  const float global = amax / (448.0f * 6.0f);
  const std::string base = "model.layers.4.mlp.shared_experts.down_proj";
  tensor& q = add(base + ".weight", dtype::u8, {out, in / 2});
  tensor& s = add(base + ".weight_scale", dtype::f8_e4m3, {out, in / 16});
  tensor& s2 = add(base + ".weight_scale_2", dtype::f32, dims{});
  tensor& is = add(base + ".input_scale", dtype::f32, {1});
  *s2.data<float>() = global;
  *is.data<float>() = 0.25f;
  std::vector<float> expected(w.size());
  for (int64_t r = 0; r < out; ++r)
    for (int64_t b = 0; b < in / 16; ++b) {
      float bmax = 1e-12f;
      for (int64_t c = b * 16; c < b * 16 + 16; ++c)
        bmax = std::max(bmax, std::fabs(w[r * in + c]));
      const uint8_t sc = f32_to_e4m3(bmax / 6.0f / global);
      s.data<uint8_t>()[r * (in / 16) + b] = sc;
      const float block_scale = ref_e4m3(sc);
      for (int64_t c = b * 16; c < b * 16 + 16; ++c) {
        const uint8_t code = f32_to_e2m1(w[r * in + c] / (block_scale * global));
        q.data<uint8_t>()[r * (in / 2) + c / 2] |= (c % 2 == 0) ? code : uint8_t(code << 4);
        expected[r * in + c] = ref_e2m1(code) * block_scale * global;
      }
    }
  open();
  const linear_weight l = find_linear(ckpt_, "layers.4.ffn.shared_experts.w2", out, in);
  EXPECT_EQ(l.format, weight_format::nvfp4);
  ASSERT_NE(l.input_scale.data, nullptr);
  EXPECT_EQ(*l.input_scale.ptr<float>(), 0.25f);
  EXPECT_EQ(*l.scale_2.ptr<float>(), global);
  expect_same(dequantize_to_f32(l), expected, out, in);
}

TEST_F(linear_weight_test, dense_bf16) {
  std::mt19937 rng(4);
  const int64_t out = 5, in = 7;
  tensor& t = add("model.layers.3.attn.compressor.wkv.weight", dtype::bf16, {out, in});
  std::vector<float> expected(size_t(out * in));
  for (int64_t i = 0; i < out * in; ++i) {
    const uint16_t bits = uint16_t(0x3c00 + rng() % 0x0800);  // finite values around 2^-7..2^8
    t.data<uint16_t>()[i] = bits;
    expected[size_t(i)] = ref_bf16(bits);
  }
  open();
  const linear_weight l = find_linear(ckpt_, "layers.3.attn.compressor.wkv", out, in);
  EXPECT_EQ(l.format, weight_format::dense);
  EXPECT_EQ(l.name, "model.layers.3.attn.compressor.wkv.weight");
  EXPECT_EQ(l.scale.data, nullptr);
  expect_same(dequantize_to_f32(l), expected, out, in);
}

TEST_F(linear_weight_test, stacked_expert_slices) {
  const int64_t experts = 3, inter = 4, hidden = 6;
  tensor& gate_up =
      add("model.layers.5.mlp.experts.gate_up_proj", dtype::f32, {experts, 2 * inter, hidden});
  tensor& down = add("model.layers.5.mlp.experts.down_proj", dtype::bf16, {experts, hidden, inter});
  for (int64_t i = 0; i < gate_up.numel(); ++i) gate_up.data<float>()[i] = float(i);
  for (int64_t i = 0; i < down.numel(); ++i) down.data<uint16_t>()[i] = uint16_t(0x3f80 + i);
  open();
  for (int64_t e = 0; e < experts; ++e) {
    for (int half = 0; half < 2; ++half) {
      const std::string name = "layers.5.ffn.experts." + std::to_string(e) + (half ? ".w3" : ".w1");
      const linear_weight l = find_linear(ckpt_, name, inter, hidden);
      EXPECT_EQ(l.format, weight_format::dense);
      const tensor d = dequantize_to_f32(l);
      for (int64_t r = 0; r < inter; ++r)
        for (int64_t c = 0; c < hidden; ++c)
          ASSERT_EQ(d.data<float>()[r * hidden + c],
                    float(((e * 2 * inter) + half * inter + r) * hidden + c))
              << name;
    }
    const linear_weight l2 =
        find_linear(ckpt_, "layers.5.ffn.experts." + std::to_string(e) + ".w2", hidden, inter);
    const tensor d = dequantize_to_f32(l2);
    for (int64_t i = 0; i < hidden * inter; ++i)
      ASSERT_EQ(d.data<float>()[i], ref_bf16(uint16_t(0x3f80 + e * hidden * inter + i)));
  }
  expect_linear_error("layers.5.ffn.experts.3.w1", inter, hidden, {"gate_up_proj", "[3, 8, 6]"});
  expect_linear_error("layers.5.ffn.experts.0.w1", inter + 1, hidden, {"gate_up_proj"});
}

TEST_F(linear_weight_test, wrong_shape_dtype_or_missing_sibling) {
  add("layers.0.attn.wq_a.weight", dtype::f8_e4m3, {8, 4});
  add("layers.0.attn.wq_a.scale", dtype::f8_e8m0, {1, 1});
  add("layers.0.attn.wkv.weight", dtype::f8_e4m3, {8, 4});  // no scale
  add("layers.0.attn.wo_a.weight", dtype::f8_e4m3, {8, 4});
  add("layers.0.attn.wo_a.scale", dtype::bf16, {1, 1});
  add("layers.0.attn.wo_b.weight", dtype::f8_e4m3, {8, 300});
  add("layers.0.attn.wo_b.scale", dtype::f8_e8m0, {1, 2});
  add("layers.0.ffn.experts.0.w1.weight", dtype::i8, {4, 16});
  add("layers.0.ffn.experts.0.w1.scale", dtype::f8_e4m3, {4, 1});
  add("layers.0.ffn.experts.1.w1.weight", dtype::i8, {4, 16});
  add("layers.0.ffn.experts.1.w1.scale", dtype::f8_e8m0, {4, 2});
  add("layers.0.ffn.shared_experts.w1.weight", dtype::u8, {4, 8});
  add("layers.0.ffn.shared_experts.w1.weight_scale_2", dtype::f32, {1});
  add("layers.0.ffn.shared_experts.w3.weight", dtype::u8, {4, 8});
  add("layers.0.ffn.shared_experts.w3.weight_scale", dtype::f8_e4m3, {4, 1});
  add("layers.0.ffn.shared_experts.w3.weight_scale_2", dtype::f32, {2});
  add("layers.0.attn.indexer.wq_b.weight", dtype::i32, {4, 4});
  open();
  expect_linear_error("layers.0.attn.wq_a", 16, 4,
                      {dir_, "layers.0.attn.wq_a.weight has shape [8, 4], expected [16, 4]"});
  expect_linear_error("layers.0.attn.wkv", 8, 4, {"missing tensor layers.0.attn.wkv.scale"});
  expect_linear_error("layers.0.attn.wo_a", 8, 4, {"layers.0.attn.wo_a.scale", "BF16"});
  expect_linear_error("layers.0.attn.wo_b", 8, 300,
                      {"layers.0.attn.wo_b.scale has shape [1, 2], expected [1, 3]"});
  expect_linear_error("layers.0.ffn.experts.0.w1", 4, 32,
                      {"layers.0.ffn.experts.0.w1.scale", "F8_E4M3"});
  expect_linear_error("layers.0.ffn.experts.1.w1", 4, 64,
                      {"layers.0.ffn.experts.1.w1.weight has shape [4, 16], expected [4, 32]"});
  expect_linear_error("layers.0.ffn.shared_experts.w1", 4, 16,
                      {"missing tensor layers.0.ffn.shared_experts.w1.weight_scale"});
  expect_linear_error("layers.0.ffn.shared_experts.w3", 4, 16,
                      {"layers.0.ffn.shared_experts.w3.weight_scale_2", "scalar"});
  expect_linear_error("layers.0.attn.indexer.wq_b", 4, 4,
                      {"layers.0.attn.indexer.wq_b.weight", "I32"});
  expect_linear_error(
      "layers.0.attn.wq_b", 4, 4,
      {"missing tensor layers.0.attn.wq_b.weight", "model.layers.0.self_attn.q_b_proj.weight"});
}

TEST_F(linear_weight_test, plain_tensors) {
  add("model.layers.0.input_layernorm.weight", dtype::bf16, {16});
  add("layers.0.ffn.gate.tid2eid", dtype::i64, {10, 6});
  add("layers.1.ffn.gate.tid2eid", dtype::f32, {10, 6});
  add("layers.1.attn.attn_sink", dtype::i64, {4});
  add("hc_head_scale", dtype::f32, {1});
  open();
  EXPECT_TRUE(has_tensor(ckpt_, "layers.0.attn_norm.weight"));
  EXPECT_FALSE(has_tensor(ckpt_, "layers.0.ffn_norm.weight"));
  EXPECT_EQ(find_tensor(ckpt_, "layers.0.attn_norm.weight", {16}).type, dtype::bf16);
  EXPECT_EQ(find_tensor(ckpt_, "layers.0.ffn.gate.tid2eid", {10, 6}).type, dtype::i64);
  EXPECT_EQ(find_tensor(ckpt_, "hc_head_scale", {1}).numel(), 1);
  auto expect_error = [&](const std::string& name, const dims& shape,
                          std::initializer_list<std::string> fragments) {
    try {
      find_tensor(ckpt_, name, shape);
      ADD_FAILURE() << name;
    } catch (const error& e) {
      for (const auto& f : fragments)
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  };
  expect_error("layers.0.attn_norm.weight", {8},
               {"model.layers.0.input_layernorm.weight has shape [16], expected [8]"});
  expect_error("layers.1.ffn.gate.tid2eid", {10, 6}, {"layers.1.ffn.gate.tid2eid", "F32"});
  expect_error("layers.1.attn.attn_sink", {4}, {"layers.1.attn.attn_sink", "I64"});
  expect_error("norm.weight", {16}, {"missing tensor norm.weight"});
}

}  // namespace
}  // namespace dsv4
