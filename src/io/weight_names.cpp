// Canonical (official) tensor names -> the spellings checkpoints use. The rules are two tables:
// whole names outside the layers, and per-layer stems (the part after `layers.N.`). A stem
// matches a canonical remainder exactly or as a dotted prefix; the unmatched tail (`.weight`,
// nothing for a linear module) is carried over unchanged, so one row serves both a module and
// its `.weight`.
#include "io/weight_names.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace dsv4 {
namespace {

struct top_level_rule {
  std::string_view official;
  std::string_view saved;   // transformers save_pretrained
  std::string_view module;  // transformers state_dict
};

constexpr top_level_rule k_top_level_rules[] = {
    {"embed.weight", "model.embed_tokens.weight", "model.embed_tokens.weight"},
    {"head.weight", "head.weight", "lm_head.weight"},
    {"head", "head", "lm_head"},  // the head as a linear module (find_linear appends .weight)
    {"norm.weight", "model.norm.weight", "model.norm.weight"},
    {"hc_head_fn", "model.hc_head.hc_fn", "model.hc_head.hc_fn"},
    {"hc_head_base", "model.hc_head.hc_base", "model.hc_head.hc_base"},
    {"hc_head_scale", "model.hc_head.hc_scale", "model.hc_head.hc_scale"},
};

// Stems inside `layers.N.`: official, save_pretrained (under `model.layers.N.`), module (under
// `model.layers.N.`). An empty module spelling means transformers has no per-tensor name (routed
// experts are stacked; see stacked_expert_candidate).
struct layer_rule {
  std::string_view official;
  std::string_view saved;
  std::string_view module;
};

constexpr layer_rule k_layer_rules[] = {
    {"attn_norm", "attn_norm", "input_layernorm"},
    {"ffn_norm", "ffn_norm", "post_attention_layernorm"},
    {"hc_attn_fn", "hc_attn_fn", "attn_hc.fn"},
    {"hc_attn_base", "hc_attn_base", "attn_hc.base"},
    {"hc_attn_scale", "hc_attn_scale", "attn_hc.scale"},
    {"hc_ffn_fn", "hc_ffn_fn", "ffn_hc.fn"},
    {"hc_ffn_base", "hc_ffn_base", "ffn_hc.base"},
    {"hc_ffn_scale", "hc_ffn_scale", "ffn_hc.scale"},
    {"attn.wq_a", "attn.wq_a", "self_attn.q_a_proj"},
    {"attn.wq_b", "attn.wq_b", "self_attn.q_b_proj"},
    {"attn.wkv", "attn.wkv", "self_attn.kv_proj"},
    {"attn.wo_a", "attn.wo_a", "self_attn.o_a_proj"},
    {"attn.wo_b", "attn.wo_b", "self_attn.o_b_proj"},
    {"attn.q_norm", "attn.q_norm", "self_attn.q_a_norm"},
    // save_pretrained writes kv_norm as `attn.norm` (its reverse mapping of `kv_norm`).
    {"attn.kv_norm", "attn.norm", "self_attn.kv_norm"},
    {"attn.attn_sink", "attn.attn_sink", "self_attn.sinks"},
    {"attn.compressor.wkv", "attn.compressor.wkv", "self_attn.compressor.kv_proj"},
    {"attn.compressor.wgate", "attn.compressor.wgate", "self_attn.compressor.gate_proj"},
    {"attn.compressor.ape", "attn.compressor.ape", "self_attn.compressor.position_bias"},
    {"attn.compressor.norm", "attn.compressor.norm", "self_attn.compressor.kv_norm"},
    // transformers nests the indexer under the compressor.
    {"attn.indexer.wq_b", "attn.indexer.wq_b", "self_attn.compressor.indexer.q_b_proj"},
    {"attn.indexer.weights_proj", "attn.indexer.weights_proj",
     "self_attn.compressor.indexer.scorer.weights_proj"},
    {"attn.indexer.compressor.wkv", "attn.indexer.compressor.wkv",
     "self_attn.compressor.indexer.kv_proj"},
    {"attn.indexer.compressor.wgate", "attn.indexer.compressor.wgate",
     "self_attn.compressor.indexer.gate_proj"},
    {"attn.indexer.compressor.ape", "attn.indexer.compressor.ape",
     "self_attn.compressor.indexer.position_bias"},
    {"attn.indexer.compressor.norm", "attn.indexer.compressor.norm",
     "self_attn.compressor.indexer.kv_norm"},
    {"ffn.gate", "ffn.gate", "mlp.gate"},  // the router as a linear module
    {"ffn.gate.weight", "ffn.gate.weight", "mlp.gate.weight"},
    {"ffn.gate.bias", "ffn.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"ffn.gate.tid2eid", "ffn.gate.tid2eid", "mlp.gate.tid2eid"},
    {"ffn.shared_experts.w1", "ffn.shared_experts.w1", "mlp.shared_experts.gate_proj"},
    {"ffn.shared_experts.w2", "ffn.shared_experts.w2", "mlp.shared_experts.down_proj"},
    {"ffn.shared_experts.w3", "ffn.shared_experts.w3", "mlp.shared_experts.up_proj"},
    {"ffn.experts", "ffn.experts", ""},
};

// Splits `layers.N.rest` into (N as written, rest); nullopt when `name` is not a layer name.
struct layer_name {
  std::string_view index;
  std::string_view rest;
};

std::optional<layer_name> split_layer_name(std::string_view name) {
  constexpr std::string_view prefix = "layers.";
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view index = name.substr(0, dot);
  if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return layer_name{index, name.substr(dot + 1)};
}

// The longest stem that equals `rest` or is a dotted prefix of it.
const layer_rule* match_layer_rule(std::string_view rest) {
  const layer_rule* best = nullptr;
  for (const layer_rule& rule : k_layer_rules) {
    const bool exact = rest == rule.official;
    const bool prefix = rest.size() > rule.official.size() && rest.starts_with(rule.official) &&
                        rest[rule.official.size()] == '.';
    if ((exact || prefix) && (!best || rule.official.size() > best->official.size())) best = &rule;
  }
  return best;
}

void push_unique(std::vector<std::string>& out, std::string name) {
  if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
}

bool parse_int(std::string_view text, int64_t& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::vector<std::string> weight_name_candidates(const std::string& canonical) {
  std::vector<std::string> out{canonical};
  // The MTP block exists only in official checkpoints (transformers drops `mtp.*`).
  if (canonical.starts_with("mtp.")) return out;

  for (const top_level_rule& rule : k_top_level_rules) {
    if (canonical != rule.official) continue;
    push_unique(out, std::string(rule.saved));
    push_unique(out, std::string(rule.module));
    return out;
  }

  const auto layer = split_layer_name(canonical);
  if (!layer) {
    push_unique(out, "model." + canonical);
    return out;
  }
  const std::string layer_prefix = "model.layers." + std::string(layer->index) + ".";
  const layer_rule* rule = match_layer_rule(layer->rest);
  if (!rule) {
    push_unique(out, "model." + canonical);
    return out;
  }
  const std::string_view tail = layer->rest.substr(rule->official.size());
  push_unique(out, layer_prefix + std::string(rule->saved) + std::string(tail));
  if (!rule->module.empty())
    push_unique(out, layer_prefix + std::string(rule->module) + std::string(tail));
  return out;
}

bool stacked_expert_candidate(const std::string& canonical, stacked_expert_ref& out) {
  // layers.N.ffn.experts.E.wK, optionally followed by `.weight`.
  const auto layer = split_layer_name(canonical);
  if (!layer) return false;
  std::string_view rest = layer->rest;
  constexpr std::string_view experts = "ffn.experts.";
  if (!rest.starts_with(experts)) return false;
  rest.remove_prefix(experts.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return false;
  int64_t expert = 0;
  if (!parse_int(rest.substr(0, dot), expert) || expert < 0) return false;
  std::string_view projection = rest.substr(dot + 1);
  if (projection.ends_with(".weight")) projection.remove_suffix(std::string_view(".weight").size());

  // gate_up_proj[E, 2I, D] = cat(w1, w3) along rows; down_proj[E, D, I] = w2.
  const std::string prefix = "model.layers." + std::string(layer->index) + ".mlp.experts.";
  if (projection == "w1" || projection == "w3") {
    out = {prefix + "gate_up_proj", expert, projection == "w1" ? 0 : 1};
  } else if (projection == "w2") {
    out = {prefix + "down_proj", expert, -1};
  } else {
    return false;
  }
  return true;
}

}  // namespace dsv4
