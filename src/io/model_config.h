// The DeepSeek-V4 model configuration, parsed from config.json in either spelling:
//   official / legacy: compress_ratios (num_hidden_layers + 1 entries, the last for MTP, or
//     exactly num_hidden_layers), num_hash_layers, qk_rope_head_dim, rope_scaling {type: yarn,...}
//   transformers >= 5.17: layer_types, mlp_layer_types, compress_rates {csa, hca},
//     partial_rotary_factor, rope_parameters {main: {...}, compress: {...}}
// Missing keys take the transformers defaults (V4-Flash values). Every error names the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

enum class attention_kind : uint8_t { sliding, csa, hca };  // compress ratio 0, csa rate, hca rate
enum class router_kind : uint8_t { hash, score };

struct rope_config {
  double theta = 10000.0;
  bool yarn = false;
  double factor = 1.0;
  double original_max_position = 0.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  // A YaRN attention factor other than 1 scales cos/sin; V4 forces 1.0.
  double attention_factor = 1.0;
};

struct model_config {
  int64_t vocab_size = 129280;
  int64_t hidden_size = 4096;
  int64_t moe_intermediate_size = 2048;
  int64_t num_hidden_layers = 43;
  int64_t num_attention_heads = 64;
  int64_t head_dim = 512;
  int64_t rope_head_dim = 64;  // qk_rope_head_dim = head_dim * partial_rotary_factor
  int64_t q_lora_rank = 1024;
  int64_t o_groups = 8;
  int64_t o_lora_rank = 1024;
  int64_t n_routed_experts = 256;
  int64_t n_shared_experts = 1;
  int64_t num_experts_per_tok = 6;
  std::string scoring_func = "sqrtsoftplus";  // sqrtsoftplus | softmax | sigmoid
  bool norm_topk_prob = true;
  double routed_scaling_factor = 1.5;
  double swiglu_limit = 10.0;
  int64_t sliding_window = 128;
  int64_t index_n_heads = 64;
  int64_t index_head_dim = 128;
  int64_t index_topk = 512;
  int64_t hc_mult = 4;
  int64_t hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  double rms_norm_eps = 1e-6;
  int64_t compress_rate_csa = 4;
  int64_t compress_rate_hca = 128;
  int64_t num_nextn_predict_layers = 1;
  int64_t max_position_embeddings = 1048576;
  int64_t bos_token_id = 0;
  int64_t eos_token_id = 1;
  rope_config rope_main;      // sliding layers: theta = rope_theta, no scaling
  rope_config rope_compress;  // CSA/HCA layers: theta = compress_rope_theta, YaRN if configured

  std::vector<attention_kind> layer_types;  // num_hidden_layers entries
  std::vector<router_kind> mlp_layer_types;  // num_hidden_layers entries

  // Checkpoint quantization as declared (informational; formats are detected per tensor).
  std::string quant_method;  // "" | "fp8"
  std::string expert_dtype;  // "" | "fp4" | "fp8"

  int64_t compress_rate(int layer) const;  // 0, compress_rate_csa or compress_rate_hca
};

model_config parse_model_config(const nlohmann::json& json, const std::string& context);
model_config load_model_config(const std::string& config_json_path);
// Checks the cross-field invariants (divisibility of heads by groups, rope dim even and < head
// dim, top-k <= experts, ...); throws naming the offending key.
void validate_model_config(const model_config& config, const std::string& context);

}  // namespace dsv4
