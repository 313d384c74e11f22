// config.json -> model_config. Key spellings accepted, first listed wins where several exist:
//   transformers / official root config (hidden_size, ...) and the official inference/config.json
//   (ModelArgs: dim, n_layers, ...). When two spellings of one field are both present they must
//   agree. A key present with value null counts as absent (transformers writes nulls).
// Semantics follow transformers' DeepseekV4Config.__post_init__ (the ground truth); where the
// brief is stricter (list lengths) the difference is noted at the rule.
// Error messages: "config CONTEXT: key 'NAME' ...", CONTEXT being the file path.
#include "io/model_config.h"

#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace dsv4 {
namespace {

using json = nlohmann::json;

constexpr std::string_view k_sliding_name = "sliding_attention";
constexpr std::string_view k_csa_name = "compressed_sparse_attention";
constexpr std::string_view k_hca_name = "heavily_compressed_attention";
constexpr std::string_view k_hash_moe_name = "hash_moe";
constexpr std::string_view k_moe_name = "moe";

// Bounds that keep a hostile config from asking for absurd allocations before validation.
constexpr int64_t k_max_layers = 1 << 16;

// Typed reads of one JSON object with error messages naming the file and the key.
class config_reader {
 public:
  config_reader(const json& object, std::string context, std::string key_prefix = "")
      : object_(object), context_(std::move(context)), key_prefix_(std::move(key_prefix)) {}

  const std::string& context() const { return context_; }
  std::string key_name(std::string_view key) const { return key_prefix_ + std::string(key); }

  // The value under the first present (non-null) key of `keys`, with that key; other present
  // spellings must hold an equal value.
  const json* find(std::initializer_list<std::string_view> keys, std::string_view* which) const {
    const json* found = nullptr;
    for (std::string_view key : keys) {
      const auto it = object_.find(std::string(key));
      if (it == object_.end() || it->is_null()) continue;
      if (!found) {
        found = &*it;
        *which = key;
      } else {
        DSV4_CHECK(*found == *it, "config {}: keys '{}' and '{}' disagree ({} vs {})", context_,
                   key_name(*which), key_name(key), found->dump(), it->dump());
      }
    }
    return found;
  }
  bool has(std::string_view key) const {
    const auto it = object_.find(std::string(key));
    return it != object_.end() && !it->is_null();
  }

  // An integer >= min_value (JSON integers only: 4.0 is not a layer count).
  std::optional<int64_t> integer(std::initializer_list<std::string_view> keys,
                                 int64_t min_value) const {
    std::string_view key;
    const json* value = find(keys, &key);
    if (!value) return std::nullopt;
    const char* what = min_value > 0 ? "a positive integer" : "a non-negative integer";
    bool ok = value->is_number_integer();
    int64_t result = 0;
    if (ok && value->is_number_unsigned()) {
      ok = value->get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
      if (ok) result = int64_t(value->get<uint64_t>());
    } else if (ok) {
      result = value->get<int64_t>();
    }
    DSV4_CHECK(ok && result >= min_value, "config {}: key '{}' must be {}, got {}", context_,
               key_name(key), what, value->dump());
    return result;
  }
  void read(int64_t& field, std::initializer_list<std::string_view> keys,
            int64_t min_value = 1) const {
    if (auto v = integer(keys, min_value)) field = *v;
  }

  // A finite number; `positive` additionally requires > 0.
  std::optional<double> number(std::initializer_list<std::string_view> keys, bool positive) const {
    std::string_view key;
    const json* value = find(keys, &key);
    if (!value) return std::nullopt;
    const bool ok = value->is_number() && std::isfinite(value->get<double>()) &&
                    (!positive || value->get<double>() > 0);
    DSV4_CHECK(ok, "config {}: key '{}' must be a {}number, got {}", context_, key_name(key),
               positive ? "positive " : "", value->dump());
    return value->get<double>();
  }
  void read(double& field, std::initializer_list<std::string_view> keys,
            bool positive = true) const {
    if (auto v = number(keys, positive)) field = *v;
  }

  void read(bool& field, std::initializer_list<std::string_view> keys) const {
    std::string_view key;
    const json* value = find(keys, &key);
    if (!value) return;
    DSV4_CHECK(value->is_boolean(), "config {}: key '{}' must be true or false, got {}", context_,
               key_name(key), value->dump());
    field = value->get<bool>();
  }

  std::optional<std::string> string(std::initializer_list<std::string_view> keys) const {
    std::string_view key;
    const json* value = find(keys, &key);
    if (!value) return std::nullopt;
    DSV4_CHECK(value->is_string(), "config {}: key '{}' must be a string, got {}", context_,
               key_name(key), value->dump());
    return value->get<std::string>();
  }
  void read(std::string& field, std::initializer_list<std::string_view> keys) const {
    if (auto v = string(keys)) field = *v;
  }

  // An object under `key` (nullopt when absent).
  std::optional<config_reader> object(std::string_view key) const {
    std::string_view which;
    const json* value = find({key}, &which);
    if (!value) return std::nullopt;
    DSV4_CHECK(value->is_object(), "config {}: key '{}' must be an object, got {}", context_,
               key_name(key), value->dump());
    return config_reader(*value, context_, key_name(key) + ".");
  }

  const json* array(std::string_view key) const {
    std::string_view which;
    const json* value = find({key}, &which);
    if (!value) return nullptr;
    DSV4_CHECK(value->is_array(), "config {}: key '{}' must be a list, got {}", context_,
               key_name(key), value->dump());
    return value;
  }

 private:
  const json& object_;
  std::string context_;
  std::string key_prefix_;
};

// One rope parameter dict ({rope_type|type, rope_theta, factor, original_max_position_embeddings,
// beta_fast, beta_slow, attention_factor, truncate}) over `base` (whose theta is the default).
rope_config parse_rope_dict(const config_reader& dict, rope_config base,
                            int64_t max_position_embeddings) {
  rope_config rope = base;
  dict.read(rope.theta, {"rope_theta"});
  const std::string type = dict.string({"rope_type", "type"}).value_or("default");
  DSV4_CHECK(type == "default" || type == "yarn",
             "config {}: key '{}' must be \"default\" or \"yarn\", got \"{}\"", dict.context(),
             dict.key_name(dict.has("rope_type") ? "rope_type" : "type"), type);
  rope.yarn = type == "yarn";
  if (!rope.yarn) return rope;

  rope.original_max_position = double(max_position_embeddings);
  dict.read(rope.original_max_position, {"original_max_position_embeddings"});
  // transformers derives a missing factor from the context extension.
  rope.factor = double(max_position_embeddings) / rope.original_max_position;
  dict.read(rope.factor, {"factor"});
  // transformers: `get("beta_fast") or 32`, so an explicit 0 also means the default.
  const auto beta_or = [&](std::string_view key, double fallback) {
    const std::optional<double> v = dict.number({key}, false);
    return v && *v != 0 ? *v : fallback;
  };
  rope.beta_fast = beta_or("beta_fast", 32.0);
  rope.beta_slow = beta_or("beta_slow", 1.0);
  dict.read(rope.truncate, {"truncate"});
  // V4 never scales cos/sin: transformers injects attention_factor 1.0 for the YaRN compress
  // rope instead of the YaRN default 0.1 ln(factor) + 1. An explicit value is kept.
  rope.attention_factor = 1.0;
  dict.read(rope.attention_factor, {"attention_factor"});
  return rope;
}

// The official inference/config.json spells YaRN as top-level keys of the compress rope.
bool has_inference_yarn_keys(const config_reader& root) {
  return root.has("original_seq_len") || root.has("rope_factor");
}

void parse_rope(const config_reader& root, model_config& c) {
  double rope_theta = 10000.0;
  double compress_rope_theta = 160000.0;
  root.read(rope_theta, {"rope_theta"});
  root.read(compress_rope_theta, {"compress_rope_theta"});
  c.rope_main = rope_config{};
  c.rope_main.theta = rope_theta;
  c.rope_compress = rope_config{};
  c.rope_compress.theta = compress_rope_theta;

  const auto parameters = root.object("rope_parameters");
  if (parameters && (parameters->has("main") || parameters->has("compress"))) {
    // New style: both sub-dicts; a missing rope_theta defaults to the top-level rope_theta as in
    // transformers' standardize_rope_params (it does not fall back to compress_rope_theta).
    const auto main = parameters->object("main");
    const auto compress = parameters->object("compress");
    DSV4_CHECK(main && compress,
               "config {}: key 'rope_parameters' must have both 'main' and 'compress'",
               root.context());
    rope_config base;
    base.theta = rope_theta;
    c.rope_main = parse_rope_dict(*main, base, c.max_position_embeddings);
    c.rope_compress = parse_rope_dict(*compress, base, c.max_position_embeddings);
    return;
  }
  // Legacy: one scaling dict (rope_scaling, or a flat rope_parameters) for the compress rope;
  // its theta is always compress_rope_theta, the main rope never scales.
  auto scaling = parameters ? parameters : root.object("rope_scaling");
  if (scaling) {
    c.rope_compress = parse_rope_dict(*scaling, c.rope_compress, c.max_position_embeddings);
    c.rope_compress.theta = compress_rope_theta;
    return;
  }
  if (has_inference_yarn_keys(root)) {
    // ModelArgs: YaRN whenever original_seq_len > 0 (model.py precompute_freqs_cis).
    int64_t original_seq_len = 0;
    root.read(original_seq_len, {"original_seq_len"}, 0);
    if (original_seq_len > 0) {
      rope_config& r = c.rope_compress;
      r.yarn = true;
      r.original_max_position = double(original_seq_len);
      root.read(r.factor, {"rope_factor"});
      root.read(r.beta_fast, {"beta_fast"});
      root.read(r.beta_slow, {"beta_slow"});
      r.attention_factor = 1.0;
    }
  }
}

attention_kind attention_kind_from_name(const std::string& name, const std::string& context,
                                        const std::string& key) {
  if (name == k_sliding_name) return attention_kind::sliding;
  if (name == k_csa_name) return attention_kind::csa;
  if (name == k_hca_name) return attention_kind::hca;
  fail("config {}: key '{}' has unknown layer type \"{}\" (expected {}, {} or {})", context, key,
       name, k_sliding_name, k_csa_name, k_hca_name);
}

void parse_layer_types(const config_reader& root, model_config& c) {
  const int64_t n = c.num_hidden_layers;
  c.layer_types.clear();
  if (const json* types = root.array("layer_types")) {
    // transformers silently truncates longer lists; a length mismatch is more likely a wrong
    // config than an intended truncation, so it is an error here.
    DSV4_CHECK(int64_t(types->size()) == n,
               "config {}: key 'layer_types' has {} entries, expected num_hidden_layers = {}",
               root.context(), types->size(), n);
    for (size_t i = 0; i < types->size(); ++i) {
      const std::string key = fmt::format("layer_types[{}]", i);
      DSV4_CHECK((*types)[i].is_string(), "config {}: key '{}' must be a string, got {}",
                 root.context(), key, (*types)[i].dump());
      c.layer_types.push_back(
          attention_kind_from_name((*types)[i].get<std::string>(), root.context(), key));
    }
    return;
  }
  if (const json* ratios = root.array("compress_ratios")) {
    // num_hidden_layers entries, or one more: the trailing entry is the MTP block's.
    DSV4_CHECK(int64_t(ratios->size()) == n || int64_t(ratios->size()) == n + 1,
               "config {}: key 'compress_ratios' has {} entries, expected num_hidden_layers = {} "
               "(or {} with the MTP entry)",
               root.context(), ratios->size(), n, n + 1);
    for (size_t i = 0; i < ratios->size(); ++i) {
      const json& r = (*ratios)[i];
      const bool is_int = r.is_number_integer();
      const int64_t ratio = is_int ? r.get<int64_t>() : -1;
      DSV4_CHECK(
          is_int && (ratio == 0 || ratio == c.compress_rate_csa || ratio == c.compress_rate_hca),
          "config {}: key 'compress_ratios[{}]' is {}, expected 0, {} (CSA) or {} (HCA)",
          root.context(), i, r.dump(), c.compress_rate_csa, c.compress_rate_hca);
      if (int64_t(i) == n) break;  // the MTP block is always sliding-window only
      c.layer_types.push_back(ratio == 0                     ? attention_kind::sliding
                              : ratio == c.compress_rate_csa ? attention_kind::csa
                                                             : attention_kind::hca);
    }
    return;
  }
  // transformers' default (V4-Pro): 2 HCA layers, then HCA/CSA alternating starting with HCA.
  for (int64_t i = 0; i < n; ++i)
    c.layer_types.push_back(i < 2 || (i - 2) % 2 == 0 ? attention_kind::hca : attention_kind::csa);
}

void parse_mlp_layer_types(const config_reader& root, model_config& c) {
  const int64_t n = c.num_hidden_layers;
  c.mlp_layer_types.clear();
  if (const json* types = root.array("mlp_layer_types")) {
    DSV4_CHECK(int64_t(types->size()) == n,
               "config {}: key 'mlp_layer_types' has {} entries, expected num_hidden_layers = {}",
               root.context(), types->size(), n);
    for (size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      const bool ok = t.is_string() && (t.get<std::string>() == k_hash_moe_name ||
                                        t.get<std::string>() == k_moe_name);
      DSV4_CHECK(ok, "config {}: key 'mlp_layer_types[{}]' is {}, expected \"{}\" or \"{}\"",
                 root.context(), i, t.dump(), k_hash_moe_name, k_moe_name);
      c.mlp_layer_types.push_back(t.get<std::string>() == k_hash_moe_name ? router_kind::hash
                                                                          : router_kind::score);
    }
    return;
  }
  int64_t hash_layers = 3;
  root.read(hash_layers, {"num_hash_layers", "n_hash_layers"}, 0);
  for (int64_t i = 0; i < n; ++i)
    c.mlp_layer_types.push_back(i < hash_layers ? router_kind::hash : router_kind::score);
}

// rope_head_dim = int(head_dim * partial_rotary_factor) when the factor is given (it wins in
// transformers), else qk_rope_head_dim (rope_head_dim in ModelArgs), else 64.
void parse_rope_head_dim(const config_reader& root, model_config& c) {
  std::optional<double> factor = root.number({"partial_rotary_factor"}, true);
  if (!factor) {
    if (const auto parameters = root.object("rope_parameters")) {
      if (const auto main = parameters->object("main"))
        factor = main->number({"partial_rotary_factor"}, true);
    }
  }
  const std::optional<int64_t> explicit_dim =
      root.integer({"qk_rope_head_dim", "rope_head_dim"}, 1);
  if (!factor) {
    if (explicit_dim) c.rope_head_dim = *explicit_dim;
    return;
  }
  DSV4_CHECK(*factor <= 1.0, "config {}: key 'partial_rotary_factor' must be in (0, 1], got {}",
             root.context(), *factor);
  // int() truncates; the epsilon keeps 0.1 * 640 style products from rounding down to 63.
  c.rope_head_dim = int64_t(std::floor(double(c.head_dim) * *factor + 1e-9));
  DSV4_CHECK(!explicit_dim || *explicit_dim == c.rope_head_dim,
             "config {}: key 'qk_rope_head_dim' ({}) disagrees with head_dim * "
             "partial_rotary_factor ({})",
             root.context(), *explicit_dim, c.rope_head_dim);
}

void parse_quantization(const config_reader& root, model_config& c) {
  c.quant_method.clear();
  c.expert_dtype.clear();
  if (const auto q = root.object("quantization_config")) {
    q->read(c.quant_method, {"quant_method"});
    q->read(c.expert_dtype, {"expert_dtype"});
  }
  if (c.quant_method.empty()) {
    root.read(c.quant_method, {"quant_method"});
    // ModelArgs.dtype "fp8"; transformers' top-level "dtype" is a torch dtype and is ignored.
    if (c.quant_method.empty() && root.string({"dtype"}).value_or("") == "fp8")
      c.quant_method = "fp8";
  }
  if (c.expert_dtype.empty()) root.read(c.expert_dtype, {"expert_dtype"});
}

}  // namespace

int64_t model_config::compress_rate(int layer) const {
  DSV4_CHECK(layer >= 0 && size_t(layer) < layer_types.size(),
             "model config: layer {} out of range [0, {})", layer, layer_types.size());
  switch (layer_types[size_t(layer)]) {
    case attention_kind::sliding:
      return 0;
    case attention_kind::csa:
      return compress_rate_csa;
    case attention_kind::hca:
      return compress_rate_hca;
  }
  return 0;
}

model_config parse_model_config(const nlohmann::json& json, const std::string& context) {
  DSV4_CHECK(json.is_object(), "config {}: expected a JSON object at the top level", context);
  const config_reader root(json, context);
  model_config c;
  root.read(c.vocab_size, {"vocab_size"});
  root.read(c.hidden_size, {"hidden_size", "dim"});
  root.read(c.moe_intermediate_size, {"moe_intermediate_size", "moe_inter_dim"});
  root.read(c.num_hidden_layers, {"num_hidden_layers", "n_layers"});
  DSV4_CHECK(c.num_hidden_layers <= k_max_layers,
             "config {}: key 'num_hidden_layers' is {}, more than the supported {}", context,
             c.num_hidden_layers, k_max_layers);
  root.read(c.num_attention_heads, {"num_attention_heads", "n_heads"});
  if (auto kv_heads = root.integer({"num_key_value_heads"}, 1))
    DSV4_CHECK(*kv_heads == 1,
               "config {}: key 'num_key_value_heads' must be 1 (V4 shares one "
               "KV head), got {}",
               context, *kv_heads);
  root.read(c.head_dim, {"head_dim"});
  parse_rope_head_dim(root, c);
  root.read(c.q_lora_rank, {"q_lora_rank"});
  root.read(c.o_groups, {"o_groups"});
  root.read(c.o_lora_rank, {"o_lora_rank"});
  root.read(c.n_routed_experts, {"n_routed_experts"});
  root.read(c.n_shared_experts, {"n_shared_experts"}, 0);
  root.read(c.num_experts_per_tok, {"num_experts_per_tok", "n_activated_experts"});
  root.read(c.scoring_func, {"scoring_func", "score_func"});
  root.read(c.norm_topk_prob, {"norm_topk_prob"});
  root.read(c.routed_scaling_factor, {"routed_scaling_factor", "route_scale"});
  root.read(c.swiglu_limit, {"swiglu_limit"});
  root.read(c.sliding_window, {"sliding_window", "window_size"});
  root.read(c.index_n_heads, {"index_n_heads"});
  root.read(c.index_head_dim, {"index_head_dim"});
  root.read(c.index_topk, {"index_topk"});
  root.read(c.hc_mult, {"hc_mult"});
  root.read(c.hc_sinkhorn_iters, {"hc_sinkhorn_iters"});
  root.read(c.hc_eps, {"hc_eps"});
  root.read(c.rms_norm_eps, {"rms_norm_eps", "norm_eps"});
  root.read(c.num_nextn_predict_layers, {"num_nextn_predict_layers", "n_mtp_layers"}, 0);
  root.read(c.max_position_embeddings, {"max_position_embeddings"});
  root.read(c.bos_token_id, {"bos_token_id"}, 0);
  // eos_token_id may be a list in transformers configs; the first id is the primary one.
  if (const auto it = json.find("eos_token_id"); it != json.end() && it->is_array()) {
    DSV4_CHECK(!it->empty() && (*it)[0].is_number_integer() && (*it)[0].get<int64_t>() >= 0,
               "config {}: key 'eos_token_id' must be a non-negative integer or a list of them, "
               "got {}",
               context, it->dump());
    c.eos_token_id = (*it)[0].get<int64_t>();
  } else {
    root.read(c.eos_token_id, {"eos_token_id"}, 0);
  }

  // Compression rates: compress_rates {csa, hca}, then legacy scalars override (as transformers).
  if (const auto rates = root.object("compress_rates")) {
    rates->read(c.compress_rate_csa, {k_csa_name});
    rates->read(c.compress_rate_hca, {k_hca_name});
  }
  root.read(c.compress_rate_csa, {"compress_rate_csa"});
  root.read(c.compress_rate_hca, {"compress_rate_hca"});

  parse_layer_types(root, c);
  parse_mlp_layer_types(root, c);
  parse_rope(root, c);
  parse_quantization(root, c);
  return c;
}

model_config load_model_config(const std::string& config_json_path) {
  std::ifstream in(config_json_path, std::ios::binary);
  DSV4_CHECK(in.good(), "config {}: cannot open file", config_json_path);
  std::stringstream text;
  text << in.rdbuf();
  const json parsed = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  DSV4_CHECK(!parsed.is_discarded(), "config {}: not valid JSON", config_json_path);
  model_config config = parse_model_config(parsed, config_json_path);
  validate_model_config(config, config_json_path);
  return config;
}

void validate_model_config(const model_config& c, const std::string& context) {
  const auto positive = [&](int64_t value, const char* key) {
    DSV4_CHECK(value > 0, "config {}: key '{}' must be a positive integer, got {}", context, key,
               value);
  };
  positive(c.vocab_size, "vocab_size");
  positive(c.hidden_size, "hidden_size");
  positive(c.moe_intermediate_size, "moe_intermediate_size");
  positive(c.num_hidden_layers, "num_hidden_layers");
  positive(c.num_attention_heads, "num_attention_heads");
  positive(c.head_dim, "head_dim");
  positive(c.q_lora_rank, "q_lora_rank");
  positive(c.o_groups, "o_groups");
  positive(c.o_lora_rank, "o_lora_rank");
  positive(c.n_routed_experts, "n_routed_experts");
  positive(c.num_experts_per_tok, "num_experts_per_tok");
  positive(c.sliding_window, "sliding_window");
  positive(c.index_n_heads, "index_n_heads");
  positive(c.index_head_dim, "index_head_dim");
  positive(c.index_topk, "index_topk");
  positive(c.hc_mult, "hc_mult");
  positive(c.hc_sinkhorn_iters, "hc_sinkhorn_iters");
  positive(c.compress_rate_csa, "compress_rate_csa");
  positive(c.compress_rate_hca, "compress_rate_hca");
  positive(c.max_position_embeddings, "max_position_embeddings");
  DSV4_CHECK(c.n_shared_experts >= 0, "config {}: key 'n_shared_experts' must be >= 0, got {}",
             context, c.n_shared_experts);
  DSV4_CHECK(c.bos_token_id < c.vocab_size && c.eos_token_id < c.vocab_size &&
                 c.bos_token_id >= 0 && c.eos_token_id >= 0,
             "config {}: keys 'bos_token_id' ({}) / 'eos_token_id' ({}) must be < vocab_size ({})",
             context, c.bos_token_id, c.eos_token_id, c.vocab_size);

  DSV4_CHECK(c.num_attention_heads % c.o_groups == 0,
             "config {}: key 'num_attention_heads' ({}) must be divisible by 'o_groups' ({})",
             context, c.num_attention_heads, c.o_groups);
  DSV4_CHECK(c.rope_head_dim > 0 && c.rope_head_dim % 2 == 0 && c.rope_head_dim < c.head_dim,
             "config {}: key 'qk_rope_head_dim' ({}) must be even, positive and less than "
             "'head_dim' ({})",
             context, c.rope_head_dim, c.head_dim);
  // The indexer applies the same rope to the trailing rope_head_dim dims of its heads.
  DSV4_CHECK(c.index_head_dim >= c.rope_head_dim,
             "config {}: key 'index_head_dim' ({}) must be at least 'qk_rope_head_dim' ({})",
             context, c.index_head_dim, c.rope_head_dim);
  DSV4_CHECK(c.num_experts_per_tok <= c.n_routed_experts,
             "config {}: key 'num_experts_per_tok' ({}) must be <= 'n_routed_experts' ({})",
             context, c.num_experts_per_tok, c.n_routed_experts);
  DSV4_CHECK(c.scoring_func == "sqrtsoftplus" || c.scoring_func == "softmax" ||
                 c.scoring_func == "sigmoid",
             "config {}: key 'scoring_func' must be sqrtsoftplus, softmax or sigmoid, got \"{}\"",
             context, c.scoring_func);
  DSV4_CHECK(c.compress_rate_csa != c.compress_rate_hca,
             "config {}: keys 'compress_rates' CSA and HCA rates must differ (both {})", context,
             c.compress_rate_csa);
  for (const auto& [value, key] :
       {std::pair{c.hc_eps, "hc_eps"}, std::pair{c.rms_norm_eps, "rms_norm_eps"},
        std::pair{c.routed_scaling_factor, "routed_scaling_factor"},
        std::pair{c.swiglu_limit, "swiglu_limit"}})
    DSV4_CHECK(std::isfinite(value) && value > 0,
               "config {}: key '{}' must be a positive number, got {}", context, key, value);

  DSV4_CHECK(int64_t(c.layer_types.size()) == c.num_hidden_layers,
             "config {}: key 'layer_types' has {} entries, expected num_hidden_layers = {}",
             context, c.layer_types.size(), c.num_hidden_layers);
  DSV4_CHECK(int64_t(c.mlp_layer_types.size()) == c.num_hidden_layers,
             "config {}: key 'mlp_layer_types' has {} entries, expected num_hidden_layers = {}",
             context, c.mlp_layer_types.size(), c.num_hidden_layers);
  for (size_t i = 0; i < c.layer_types.size(); ++i) {
    const auto kind = c.layer_types[i];
    DSV4_CHECK(kind == attention_kind::sliding || kind == attention_kind::csa ||
                   kind == attention_kind::hca,
               "config {}: key 'layer_types[{}]' is not a known attention kind", context, i);
  }

  for (const auto& [rope, key] : {std::pair{&c.rope_main, "rope_parameters.main"},
                                  std::pair{&c.rope_compress, "rope_parameters.compress"}}) {
    DSV4_CHECK(std::isfinite(rope->theta) && rope->theta > 1.0,
               "config {}: key '{}.rope_theta' must be a number > 1, got {}", context, key,
               rope->theta);
    if (!rope->yarn) continue;
    DSV4_CHECK(std::isfinite(rope->factor) && rope->factor >= 1.0,
               "config {}: key '{}.factor' must be >= 1, got {}", context, key, rope->factor);
    DSV4_CHECK(std::isfinite(rope->original_max_position) && rope->original_max_position >= 1.0,
               "config {}: key '{}.original_max_position_embeddings' must be >= 1, got {}", context,
               key, rope->original_max_position);
    DSV4_CHECK(rope->beta_fast > 0 && rope->beta_slow > 0,
               "config {}: keys '{}.beta_fast' / 'beta_slow' must be positive, got {} / {}",
               context, key, rope->beta_fast, rope->beta_slow);
  }
}

}  // namespace dsv4
