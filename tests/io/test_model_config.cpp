// model_config parsing: the official Flash config (expected values from dsv4-model.md §1.1), the
// official inference/config.json, a transformers-saved config against its legacy source (both
// fixtures written by tests/fixtures/generate_io_fixtures.py), YaRN frequencies against
// transformers' own computation, and rejection of bad configs with errors naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "io/model_config.h"
#include "io/rope_frequencies.h"

namespace dsv4 {
namespace {

using json = nlohmann::json;

const std::string k_flash_config = DSV4_SHARED_DIR "/data/dsv4-flash-official/config.json";
const std::string k_flash_inference_config =
    DSV4_SHARED_DIR "/data/dsv4-flash-official/inference-config.json";
const std::string k_legacy_tiny = DSV4_TEST_DATA_DIR "/configs/legacy_tiny.json";
const std::string k_transformers_tiny = DSV4_TEST_DATA_DIR "/configs/transformers_tiny.json";

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);
}

std::string describe(const rope_config& r) {
  return fmt::format(
      "theta={} yarn={} factor={} orig={} beta_fast={} beta_slow={} truncate={} af={}", r.theta,
      r.yarn, r.factor, r.original_max_position, r.beta_fast, r.beta_slow, r.truncate,
      r.attention_factor);
}

// Every field, one per line, so that a mismatch shows which one differs.
std::string describe(const model_config& c) {
  std::string layers, routers;
  for (auto k : c.layer_types) layers += "SCH"[int(k)];
  for (auto k : c.mlp_layer_types) routers += "HS"[int(k)];
  return fmt::format(
      "vocab={}\nhidden={}\nmoe_inter={}\nlayers={}\nheads={}\nhead_dim={}\nrope_dim={}\n"
      "q_lora={}\no_groups={}\no_lora={}\nexperts={}\nshared={}\ntopk={}\nscoring={}\n"
      "norm_topk={}\nscale={}\nswiglu={}\nwindow={}\nindex={}/{}/{}\nhc={}/{}/{}\nrms_eps={}\n"
      "rates={}/{}\nmtp={}\nmax_pos={}\nbos={}\neos={}\nmain: {}\ncompress: {}\nschedule={}\n"
      "routers={}\nquant={}\nexpert_dtype={}\n",
      c.vocab_size, c.hidden_size, c.moe_intermediate_size, c.num_hidden_layers,
      c.num_attention_heads, c.head_dim, c.rope_head_dim, c.q_lora_rank, c.o_groups, c.o_lora_rank,
      c.n_routed_experts, c.n_shared_experts, c.num_experts_per_tok, c.scoring_func,
      c.norm_topk_prob, c.routed_scaling_factor, c.swiglu_limit, c.sliding_window, c.index_n_heads,
      c.index_head_dim, c.index_topk, c.hc_mult, c.hc_sinkhorn_iters, c.hc_eps, c.rms_norm_eps,
      c.compress_rate_csa, c.compress_rate_hca, c.num_nextn_predict_layers,
      c.max_position_embeddings, c.bos_token_id, c.eos_token_id, describe(c.rope_main),
      describe(c.rope_compress), layers, routers, c.quant_method, c.expert_dtype);
}

TEST(ModelConfig, OfficialFlashConfig) {
  const model_config c = load_model_config(k_flash_config);
  EXPECT_EQ(c.vocab_size, 129280);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.num_hidden_layers, 43);
  EXPECT_EQ(c.num_attention_heads, 64);
  EXPECT_EQ(c.head_dim, 512);
  EXPECT_EQ(c.rope_head_dim, 64);
  EXPECT_EQ(c.q_lora_rank, 1024);
  EXPECT_EQ(c.o_groups, 8);
  EXPECT_EQ(c.o_lora_rank, 1024);
  EXPECT_EQ(c.moe_intermediate_size, 2048);
  EXPECT_EQ(c.n_routed_experts, 256);
  EXPECT_EQ(c.num_experts_per_tok, 6);
  EXPECT_EQ(c.n_shared_experts, 1);
  EXPECT_EQ(c.scoring_func, "sqrtsoftplus");
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 1.5);
  EXPECT_DOUBLE_EQ(c.swiglu_limit, 10.0);
  EXPECT_EQ(c.sliding_window, 128);
  EXPECT_EQ(c.index_n_heads, 64);
  EXPECT_EQ(c.index_head_dim, 128);
  EXPECT_EQ(c.index_topk, 512);
  EXPECT_EQ(c.hc_mult, 4);
  EXPECT_EQ(c.hc_sinkhorn_iters, 20);
  EXPECT_DOUBLE_EQ(c.hc_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.max_position_embeddings, 1048576);
  EXPECT_EQ(c.num_nextn_predict_layers, 1);
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_EQ(c.eos_token_id, 1);
  EXPECT_EQ(c.quant_method, "fp8");
  EXPECT_EQ(c.expert_dtype, "");  // the initial revision has no expert_dtype

  EXPECT_DOUBLE_EQ(c.rope_main.theta, 10000.0);
  EXPECT_FALSE(c.rope_main.yarn);
  EXPECT_DOUBLE_EQ(c.rope_compress.theta, 160000.0);
  EXPECT_TRUE(c.rope_compress.yarn);
  EXPECT_DOUBLE_EQ(c.rope_compress.factor, 16.0);
  EXPECT_DOUBLE_EQ(c.rope_compress.original_max_position, 65536.0);
  EXPECT_DOUBLE_EQ(c.rope_compress.beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(c.rope_compress.beta_slow, 1.0);
  EXPECT_TRUE(c.rope_compress.truncate);
  EXPECT_DOUBLE_EQ(c.rope_compress.attention_factor, 1.0);

  // Layers 0-1 sliding, even 2..42 CSA, odd 3..41 HCA; layers 0-2 hash-routed.
  ASSERT_EQ(c.layer_types.size(), 43u);
  ASSERT_EQ(c.mlp_layer_types.size(), 43u);
  for (int i = 0; i < 43; ++i) {
    const attention_kind expected = i < 2        ? attention_kind::sliding
                                    : i % 2 == 0 ? attention_kind::csa
                                                 : attention_kind::hca;
    EXPECT_EQ(c.layer_types[i], expected) << "layer " << i;
    EXPECT_EQ(c.compress_rate(i), i < 2 ? 0 : i % 2 == 0 ? 4 : 128) << "layer " << i;
    EXPECT_EQ(c.mlp_layer_types[i], i < 3 ? router_kind::hash : router_kind::score) << i;
  }
  EXPECT_THROW(c.compress_rate(43), error);
  EXPECT_THROW(c.compress_rate(-1), error);
}

TEST(ModelConfig, InferenceConfigMatchesRootConfig) {
  model_config root = load_model_config(k_flash_config);
  const model_config inference = load_model_config(k_flash_inference_config);
  EXPECT_EQ(inference.quant_method, "fp8");
  EXPECT_EQ(inference.expert_dtype, "fp4");
  root.expert_dtype = inference.expert_dtype;  // declared only in the inference config
  EXPECT_EQ(describe(inference), describe(root));
}

TEST(ModelConfig, TransformersConfigMatchesLegacySource) {
  const model_config legacy = load_model_config(k_legacy_tiny);
  const model_config saved = load_model_config(k_transformers_tiny);
  EXPECT_EQ(describe(saved), describe(legacy));
  // And both are the model the generator asked for.
  EXPECT_EQ(legacy.rope_head_dim, 8);
  EXPECT_EQ(legacy.layer_types,
            (std::vector{attention_kind::sliding, attention_kind::csa, attention_kind::hca}));
  EXPECT_EQ(legacy.mlp_layer_types,
            (std::vector{router_kind::hash, router_kind::score, router_kind::score}));
  EXPECT_EQ(legacy.quant_method, "fp8");
  EXPECT_EQ(legacy.expert_dtype, "fp4");
}

TEST(ModelConfig, TransformersConfigDoesNotNeedLegacyKeys) {
  // The saved config also carries qk_rope_head_dim; without it the new spellings must suffice.
  json j = read_json(k_transformers_tiny);
  j.erase("qk_rope_head_dim");
  j.erase("expert_dtype");
  const model_config c = parse_model_config(j, "tiny");
  EXPECT_EQ(describe(c), describe(load_model_config(k_legacy_tiny)));
}

TEST(ModelConfig, NestedRopeWithoutAttentionFactorIsUnscaled) {
  json j = read_json(k_transformers_tiny);
  j["rope_parameters"]["compress"].erase("attention_factor");
  j["rope_parameters"]["compress"]["truncate"] = false;
  j["rope_parameters"]["compress"]["factor"] = 8;
  j["rope_parameters"]["compress"]["beta_fast"] = 0;  // transformers: `or 32`
  const model_config c = parse_model_config(j, "tiny");
  EXPECT_DOUBLE_EQ(c.rope_compress.attention_factor, 1.0);
  EXPECT_FALSE(c.rope_compress.truncate);
  EXPECT_DOUBLE_EQ(c.rope_compress.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_compress.beta_fast, 32.0);
  EXPECT_FALSE(c.rope_main.yarn);
}

TEST(ModelConfig, LegacyCompressRatiosWithoutMtpEntryAndCustomRates) {
  json j = read_json(k_legacy_tiny);
  j["compress_ratios"] = {0, 8, 64};
  j["compress_rate_csa"] = 8;
  j["compress_rate_hca"] = 64;
  const model_config c = parse_model_config(j, "tiny");
  validate_model_config(c, "tiny");
  EXPECT_EQ(c.compress_rate(1), 8);
  EXPECT_EQ(c.compress_rate(2), 64);
  EXPECT_EQ(c.layer_types[2], attention_kind::hca);
}

TEST(ModelConfig, MissingKeysTakeTransformersDefaults) {
  const model_config c = parse_model_config(json::object(), "empty");
  validate_model_config(c, "empty");
  EXPECT_EQ(c.num_hidden_layers, 43);
  EXPECT_EQ(c.rope_head_dim, 64);
  // transformers' default schedule: 2 HCA, then HCA/CSA alternating; 3 hash layers.
  ASSERT_EQ(c.layer_types.size(), 43u);
  EXPECT_EQ(c.layer_types[0], attention_kind::hca);
  EXPECT_EQ(c.layer_types[1], attention_kind::hca);
  EXPECT_EQ(c.layer_types[2], attention_kind::hca);
  EXPECT_EQ(c.layer_types[3], attention_kind::csa);
  EXPECT_EQ(c.mlp_layer_types[2], router_kind::hash);
  EXPECT_EQ(c.mlp_layer_types[3], router_kind::score);
}

TEST(ModelConfig, FixtureModelConfigsLoad) {
  // Every model fixture config (transformers-written and official-spelling) must be accepted,
  // including index_head_dim == qk_rope_head_dim (transformers allows it).
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           DSV4_TEST_DATA_DIR "/models",
           std::filesystem::directory_options::skip_permission_denied)) {
    const auto path = entry.path() / "config.json";
    if (!std::filesystem::exists(path)) continue;
    const model_config c = load_model_config(path.string());
    EXPECT_EQ(int64_t(c.layer_types.size()), c.num_hidden_layers) << path;
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}

// ---- YaRN ----

TEST(RopeFrequencies, FlashCompressCorrectionRange) {
  const model_config c = load_model_config(k_flash_config);
  const yarn_correction_range range = rope_yarn_correction_range(c.rope_compress, c.rope_head_dim);
  EXPECT_EQ(range.low, 15.0);
  EXPECT_EQ(range.high, 25.0);

  // Independent of the ramp code: pairs <= 15 keep base^(-2i/64), pairs >= 25 are divided by 16.
  const std::vector<float> inv = rope_inverse_frequencies(c.rope_compress, c.rope_head_dim);
  ASSERT_EQ(inv.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const double plain = std::pow(160000.0, -2.0 * i / 64);
    if (i <= 15) {
      EXPECT_NEAR(inv[i] / plain, 1.0, 1e-6) << i;
    } else if (i >= 25) {
      EXPECT_NEAR(inv[i] / plain, 1.0 / 16, 1e-6) << i;
    } else {
      EXPECT_TRUE(inv[i] < plain && inv[i] > plain / 16) << i;
    }
  }
}

TEST(RopeFrequencies, MainRopeIsUnscaled) {
  const model_config c = load_model_config(k_flash_config);
  const std::vector<float> inv = rope_inverse_frequencies(c.rope_main, c.rope_head_dim);
  ASSERT_EQ(inv.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(inv[i] / std::pow(10000.0, -2.0 * i / 64), 1.0, 1e-6);
}

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(RopeFrequencies, MatchTransformersYarn) {
  const json fixture = read_json(DSV4_TEST_DATA_DIR "/rope/yarn_inverse_frequencies.json");
  ASSERT_GE(fixture["cases"].size(), 3u);
  for (const json& c : fixture["cases"]) {
    const json& p = c["rope"];
    rope_config rope;
    rope.yarn = true;
    rope.theta = p["rope_theta"].get<double>();
    rope.factor = p["factor"].get<double>();
    rope.original_max_position = p["original_max_position_embeddings"].get<double>();
    rope.beta_fast = p["beta_fast"].get<double>();
    rope.beta_slow = p["beta_slow"].get<double>();
    rope.truncate = p.value("truncate", true);
    const std::vector<float> inv = rope_inverse_frequencies(rope, c["rope_dim"].get<int64_t>());
    const json& expected = c["inverse_frequencies_bits"];
    ASSERT_EQ(inv.size(), expected.size()) << c["name"];
    for (size_t i = 0; i < inv.size(); ++i) {
      const float want = float_from_bits(expected[i].get<uint32_t>());
      // Same float32 operations in the same order: bit-exact.
      EXPECT_EQ(inv[i], want) << c["name"] << " pair " << i;
    }
  }
}

TEST(RopeFrequencies, RejectsOddDim) {
  EXPECT_THROW(rope_inverse_frequencies(rope_config{}, 7), error);
  EXPECT_THROW(rope_inverse_frequencies(rope_config{}, 0), error);
}

// ---- bad configs ----

// The error message of parsing + validating `j`, or "" when it was accepted.
std::string config_error(const json& j) {
  try {
    validate_model_config(parse_model_config(j, "bad.json"), "bad.json");
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

void expect_error_naming(const json& j, const std::string& key) {
  const std::string message = config_error(j);
  EXPECT_NE(message, "") << "accepted: " << j.dump();
  EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
  EXPECT_NE(message.find("'" + key), std::string::npos) << message;
}

TEST(ModelConfig, BadConfigsNameTheKey) {
  const json base = read_json(k_legacy_tiny);
  ASSERT_EQ(config_error(base), "");
  const auto with = [&](const std::string& key, const json& value) {
    json j = base;
    j[key] = value;
    return j;
  };
  expect_error_naming(with("hidden_size", "32"), "hidden_size");
  expect_error_naming(with("hidden_size", 32.5), "hidden_size");
  expect_error_naming(with("num_attention_heads", -2), "num_attention_heads");
  expect_error_naming(with("vocab_size", 0), "vocab_size");
  expect_error_naming(with("num_hidden_layers", 1LL << 40), "num_hidden_layers");
  expect_error_naming(with("rms_norm_eps", -1.0), "rms_norm_eps");
  expect_error_naming(with("norm_topk_prob", 1), "norm_topk_prob");
  expect_error_naming(with("scoring_func", "relu"), "scoring_func");
  expect_error_naming(with("o_groups", 3), "num_attention_heads");
  expect_error_naming(with("qk_rope_head_dim", 7), "qk_rope_head_dim");
  expect_error_naming(with("qk_rope_head_dim", 32), "qk_rope_head_dim");
  expect_error_naming(with("index_head_dim", 6), "index_head_dim");
  expect_error_naming(with("num_experts_per_tok", 5), "num_experts_per_tok");
  expect_error_naming(with("compress_ratios", {0, 4, 128, 0, 0}), "compress_ratios");
  expect_error_naming(with("compress_ratios", {0, 4}), "compress_ratios");
  expect_error_naming(with("compress_ratios", {0, 4, 64, 0}), "compress_ratios[2]");
  expect_error_naming(with("compress_ratios", "0,4,128"), "compress_ratios");
  expect_error_naming(with("layer_types", {"sliding_attention", "full_attention", "moe"}),
                      "layer_types[1]");
  expect_error_naming(with("layer_types", {"sliding_attention"}), "layer_types");
  expect_error_naming(with("mlp_layer_types", {"hash_moe", "dense", "moe"}), "mlp_layer_types[1]");
  expect_error_naming(with("rope_scaling", {{"type", "linear"}, {"factor", 2}}),
                      "rope_scaling.type");
  expect_error_naming(with("rope_scaling", "yarn"), "rope_scaling");
  expect_error_naming(with("rope_scaling", {{"type", "yarn"}, {"factor", "16"}}),
                      "rope_scaling.factor");
  expect_error_naming(with("compress_rates", {{"compressed_sparse_attention", 0}}),
                      "compress_rates.compressed_sparse_attention");
  expect_error_naming(with("partial_rotary_factor", 0.5), "qk_rope_head_dim");
  expect_error_naming(with("dim", 64), "hidden_size");  // two spellings that disagree
  expect_error_naming(with("quantization_config", {{"quant_method", 8}}),
                      "quantization_config.quant_method");
  expect_error_naming(with("num_key_value_heads", 2), "num_key_value_heads");
  expect_error_naming(with("eos_token_id", 64), "bos_token_id");

  const std::string not_object = config_error(json::array({1, 2}));
  EXPECT_NE(not_object.find("bad.json"), std::string::npos) << not_object;
}

TEST(ModelConfig, NullMeansAbsent) {
  json j = read_json(k_legacy_tiny);
  j["pad_token_id"] = nullptr;
  j["partial_rotary_factor"] = nullptr;
  j["layer_types"] = nullptr;
  EXPECT_EQ(describe(parse_model_config(j, "tiny")), describe(load_model_config(k_legacy_tiny)));
}

TEST(ModelConfig, FileErrorsNameTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / "dsv4_test_model_config";
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing.json").string();
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"hidden_size\": 32,";
  for (const std::string& path : {missing, broken}) {
    try {
      load_model_config(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsv4
