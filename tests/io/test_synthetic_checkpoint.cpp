// Synthetic checkpoints: the enumerated tensor list against the release statistics (Flash, Pro)
// and, when python3 is present, against dsv4_tensor_schema.py itself; a small written checkpoint
// opens, has the schema's dtypes/shapes, formats and value scales, and runs in the engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "engine/model_runner.h"
#include "io/checkpoint.h"
#include "io/linear_weight.h"
#include "io/model_config.h"
#include "io/synthetic_checkpoint.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string k_flash = DSV4_SHARED_DIR "/data/dsv4-flash-official/config.json";
const std::string k_pro = DSV4_TEST_DATA_DIR "/configs/official_pro.json";
const std::string k_small = DSV4_TEST_DATA_DIR "/configs/official_small.json";
const std::string k_schema = DSV4_SHARED_DIR "/tools/dsv4_tensor_schema.py";

// The full list of a config as the release has it (all layers + MTP with the trailing ratio).
std::vector<synthetic_tensor> full_list(const std::string& path) {
  const model_config c = load_model_config(path);
  std::ifstream in(path);
  const json j = json::parse(in);
  synthetic_layout layout;
  layout.mtp = true;
  layout.mtp_compress_ratio = j["compress_ratios"].back().get<int64_t>();
  return official_tensor_list(c, layout);
}

std::map<std::string, int64_t> dtype_counts(const std::vector<synthetic_tensor>& list) {
  std::map<std::string, int64_t> m;
  for (const auto& t : list) m[std::string(dtype_name(t.type))] += 1;
  return m;
}

TEST(synthetic_list, flash_matches_release_statistics) {
  if (!fs::exists(k_flash)) GTEST_SKIP() << "no " << k_flash;
  const auto list = full_list(k_flash);
  EXPECT_EQ(list.size(), 69187u);
  EXPECT_EQ(synthetic_tensor_bytes(list), 159609485896ull);
  const std::map<std::string, int64_t> expected = {
      {"BF16", 433}, {"F32", 417}, {"F8_E4M3", 375}, {"F8_E8M0", 34167}, {"I64", 3}, {"I8", 33792}};
  EXPECT_EQ(dtype_counts(list), expected);
  int64_t mtp = 0;
  for (const auto& t : list) mtp += t.name.starts_with("mtp.") ? 1 : 0;
  EXPECT_EQ(mtp, 1575);
  const model_config c = load_model_config(k_flash);
  EXPECT_EQ(synthetic_shard_count(c, synthetic_layout{}), 46);  // as the release
}

TEST(synthetic_list, pro_matches_release_statistics) {
  const auto list = full_list(k_pro);
  EXPECT_EQ(list.size(), 145116u);
  EXPECT_EQ(synthetic_tensor_bytes(list), 864704792696ull);
  const std::map<std::string, int64_t> expected = {
      {"BF16", 619}, {"F32", 590}, {"F8_E4M3", 528}, {"F8_E8M0", 71952}, {"I64", 3}, {"I8", 71424}};
  EXPECT_EQ(dtype_counts(list), expected);
}

bool have_python() {
  return std::system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

// Runs the schema generator's build() on `config`; returns [[name, dtype, shape], ...] in its
// insertion order.
json python_schema(const std::string& config, const fs::path& scratch) {
  const fs::path out = scratch / "schema.json";
  const std::string cmd = "python3 -c \"import sys, json; sys.argv = ['x']; sys.path.insert(0, '" +
                          fs::path(k_schema).parent_path().string() +
                          "'); import dsv4_tensor_schema as s; "
                          "T = s.build(json.load(open('" +
                          config +
                          "'))); "
                          "json.dump([[k, v[0], v[1]] for k, v in T.items()], open('" +
                          out.string() + "', 'w'))\"";
  if (std::system(cmd.c_str()) != 0) return json();
  std::ifstream in(out);
  return json::parse(in);
}

void expect_same_as_python(const std::string& config) {
  if (!have_python() || !fs::exists(k_schema)) GTEST_SKIP() << "no python3 or schema script";
  const fs::path scratch =
      fs::temp_directory_path() / ("dsv4_synth_py_" + std::to_string(getpid()));
  fs::create_directories(scratch);
  const json py = python_schema(config, scratch);
  fs::remove_all(scratch);
  ASSERT_TRUE(py.is_array()) << "schema script failed on " << config;
  const auto list = full_list(config);
  ASSERT_EQ(py.size(), list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = py[i];
    ASSERT_EQ(e[0].get<std::string>(), list[i].name) << "at " << i;
    ASSERT_EQ(e[1].get<std::string>(), dtype_name(list[i].type)) << list[i].name;
    ASSERT_EQ(e[2].get<std::vector<int64_t>>(), list[i].shape.to_vector()) << list[i].name;
  }
}

TEST(synthetic_list, flash_equals_python_schema) {
  if (!fs::exists(k_flash)) GTEST_SKIP() << "no " << k_flash;
  expect_same_as_python(k_flash);
}
TEST(synthetic_list, pro_equals_python_schema) {
  expect_same_as_python(k_pro);
}
TEST(synthetic_list, small_equals_python_schema) {
  expect_same_as_python(k_small);
}

TEST(synthetic_values, fast_e2m1_equals_core_encoder) {
  for (int i = -8000; i <= 8000; ++i) {
    const float x = float(i) * 0.001f;  // every threshold and tie in [-8, 8]
    ASSERT_EQ(e2m1_fast(x), f32_to_e2m1(x)) << x;
  }
  for (float x : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -0.25f, -5.0f, 100.0f, -0.0f})
    ASSERT_EQ(e2m1_fast(x), f32_to_e2m1(x)) << x;
}

TEST(synthetic_values, fast_e4m3_equals_core_encoder) {
  // Every float in [-448, 448] whose low 12 mantissa bits are 0 or ties/halfway patterns of the
  // 3-bit rounding, plus a dense sweep of small values (subnormal range and its edge).
  for (uint32_t hi = 0; hi < (1u << 20); ++hi)
    for (uint32_t lo : {0u, 0x7ffffu, 0x80000u, 0x80001u, 0xfffffu}) {
      const float x = std::bit_cast<float>((hi << 20) | lo);
      if (!(std::fabs(x) <= 448.0f)) continue;
      ASSERT_EQ(e4m3_fast(x), f32_to_e4m3(x)) << x;
      ASSERT_EQ(e4m3_fast(-x), f32_to_e4m3(-x)) << -x;
    }
  for (int i = 0; i <= 200000; ++i) {
    const float x = float(i) * 1e-7f;
    ASSERT_EQ(e4m3_fast(x), f32_to_e4m3(x)) << x;
  }
}

class synthetic_checkpoint_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dsv4_synth_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  make_synthetic_result make(const std::string& sub, int64_t layers, bool mtp, uint64_t seed) {
    make_synthetic_options o;
    o.config_path = k_small;
    o.layers = layers;
    o.mtp = mtp;
    o.seed = seed;
    o.out_dir = (dir_ / sub).string();
    o.threads = 2;
    return make_synthetic_checkpoint(o);
  }
  fs::path dir_;
};

double stddev(const tensor& t) {
  const float* p = t.data<float>();
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s += p[i];
    s2 += double(p[i]) * p[i];
  }
  const double n = double(t.numel());
  return std::sqrt(std::max(0.0, s2 / n - (s / n) * (s / n)));
}

TEST_F(synthetic_checkpoint_test, written_checkpoint_has_schema_formats_and_scales) {
  const auto r = make("m", 3, true, 7);
  EXPECT_EQ(r.tensors, 243);  // dsv4_tensor_schema.py on official_small.json
  EXPECT_EQ(r.bytes, 584507u);
  EXPECT_EQ(r.shards, 6);
  const checkpoint ckpt = checkpoint::open((dir_ / "m").string());
  const model_config c = load_model_config((dir_ / "m" / "config.json").string());
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_EQ(ckpt.total_bytes(), r.bytes);

  const auto list = full_list(k_small);
  ASSERT_EQ(ckpt.names().size(), list.size());
  for (const auto& t : list) {
    const checkpoint_tensor f = ckpt.find(t.name);
    ASSERT_NE(f.entry, nullptr) << t.name;
    EXPECT_EQ(f.entry->type, t.type) << t.name;
    EXPECT_EQ(f.entry->shape.to_vector(), t.shape.to_vector()) << t.name;
  }

  const int64_t d = c.hidden_size, inter = c.moe_intermediate_size;
  const struct {
    std::string name;
    int64_t out, in;
    weight_format format;
  } linears[] = {
      {"layers.0.attn.wq_a", c.q_lora_rank, d, weight_format::fp8_block},
      {"layers.1.attn.wq_b", c.num_attention_heads * c.head_dim, c.q_lora_rank,
       weight_format::fp8_block},
      {"layers.2.attn.wo_b", d, c.o_groups * c.o_lora_rank, weight_format::fp8_block},
      {"layers.1.ffn.shared_experts.w2", d, inter, weight_format::fp8_block},
      {"mtp.0.e_proj", d, d, weight_format::fp8_block},
      {"layers.0.ffn.experts.1.w1", inter, d, weight_format::mxfp4},
      {"layers.2.ffn.experts.3.w2", d, inter, weight_format::mxfp4},
      {"layers.1.attn.compressor.wkv", 2 * c.head_dim, d, weight_format::dense},
  };
  for (const auto& l : linears) {
    const linear_weight w = find_linear(ckpt, l.name, l.out, l.in);
    EXPECT_EQ(w.format, l.format) << l.name;
    const double want = 1.0 / std::sqrt(double(l.in));
    const double got = stddev(dequantize_to_f32(w));
    EXPECT_NEAR(got, want, 0.2 * want) << l.name;
  }

  const tensor norm = tensor::to_f32(ckpt.view("layers.0.attn_norm.weight"));
  double mean = 0;
  for (int64_t i = 0; i < norm.numel(); ++i) mean += norm.data<float>()[i];
  EXPECT_NEAR(mean / double(norm.numel()), 1.0, 0.05);
  EXPECT_NEAR(stddev(norm), 0.1, 0.02);
  EXPECT_NEAR(stddev(tensor::to_f32(ckpt.view("embed.weight"))), 0.02, 0.004);
  EXPECT_NEAR(stddev(tensor::to_f32(ckpt.view("layers.0.attn.attn_sink"))), 1.0, 0.8);

  const tensor_view tid = ckpt.view("layers.0.ffn.gate.tid2eid");
  ASSERT_EQ(tid.type, dtype::i64);
  const auto* ids = static_cast<const int64_t*>(tid.data);
  for (int64_t row = 0; row < tid.shape[0]; ++row) {
    std::set<int64_t> seen;
    for (int64_t j = 0; j < tid.shape[1]; ++j) {
      const int64_t e = ids[row * tid.shape[1] + j];
      EXPECT_TRUE(e >= 0 && e < c.n_routed_experts) << e;
      seen.insert(e);
    }
    EXPECT_EQ(int64_t(seen.size()), tid.shape[1]) << "row " << row;
  }
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST_F(synthetic_checkpoint_test, deterministic_per_seed) {
  make("a", 2, false, 1);
  make("b", 2, false, 1);
  make("c", 2, false, 2);
  const std::string f = "model-00002-of-00004.safetensors";  // layer 0
  EXPECT_EQ(file_bytes(dir_ / "a" / f), file_bytes(dir_ / "b" / f));
  EXPECT_NE(file_bytes(dir_ / "a" / f), file_bytes(dir_ / "c" / f));
  const json cfg = json::parse(file_bytes(dir_ / "a" / "config.json"));
  EXPECT_EQ(cfg["num_hidden_layers"], 2);
  EXPECT_EQ(cfg["compress_ratios"], json::parse("[0, 4, 0]"));  // two layers + the MTP entry
  const checkpoint ckpt = checkpoint::open((dir_ / "a").string());
  EXPECT_FALSE(ckpt.has("mtp.0.e_proj.weight"));
  EXPECT_FALSE(ckpt.has("layers.2.attn_norm.weight"));
}

TEST_F(synthetic_checkpoint_test, engine_runs_finite_logits) {
  make("m", 3, false, 3);
  runner_options o;
  o.cache.max_sequences = 1;
  o.cache.max_context = 64;
  auto runner = model_runner::load((dir_ / "m").string(), o);
  const int seq = runner->add_sequence();
  std::vector<int32_t> prompt = {0, 5, 17, 42, 99, 3, 64, 127, 8, 1};
  tensor logits = runner->step({sequence_chunk{seq, prompt, true}});
  ASSERT_EQ(logits.numel(), int64_t(prompt.size()) * runner->config().vocab_size);
  for (int t = 0; t < 4; ++t) {
    for (int64_t i = 0; i < logits.numel(); ++i)
      ASSERT_TRUE(std::isfinite(logits.data<float>()[i])) << "step " << t << " index " << i;
    logits = runner->step({sequence_chunk{seq, {int32_t(10 + t)}, false}});
  }
  double s2 = 0;
  for (int64_t i = 0; i < logits.numel(); ++i)
    s2 += double(logits.data<float>()[i]) * logits.data<float>()[i];
  const double rms = std::sqrt(s2 / double(logits.numel()));
  EXPECT_GT(rms, 0.05);  // O(1) logits, not collapsed or exploded
  EXPECT_LT(rms, 20.0);
}

TEST_F(synthetic_checkpoint_test, bad_input_is_an_error) {
  EXPECT_THROW(make("m", 0, false, 0), error);
  EXPECT_THROW(make("m", 4, false, 0), error);
  make_synthetic_options o;
  o.config_path = (dir_ / "missing.json").string();
  o.layers = 1;
  o.out_dir = (dir_ / "m").string();
  EXPECT_THROW(make_synthetic_checkpoint(o), error);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  o.config_path = k_small;
  o.out_dir = (dir_ / "file" / "sub").string();  // under a regular file: cannot be created
  EXPECT_THROW(make_synthetic_checkpoint(o), error);
  std::ofstream(dir_ / "bad.json") << "{\"num_hidden_layers\": 2, \"compress_ratios\": [0]}";
  o.config_path = (dir_ / "bad.json").string();
  o.out_dir = (dir_ / "m").string();
  EXPECT_THROW(make_synthetic_checkpoint(o), error);
}

}  // namespace
}  // namespace dsv4
