// dsv4 inspect: config summary, layer schedule and tensor statistics of a model directory.
// Reads config.json and safetensors headers only (no tensor data is touched).
//
// Parameter counts are in logical elements: packed FP4 weights (I8/U8 `*.weight` tensors, two
// e2m1 codes per byte) count 2 per byte; F4 (e2m1) shapes are already in elements.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "tools/command.h"

namespace dsv4::tools {
namespace {

struct inspect_options {
  std::string model;
  bool json = false;
};

struct dtype_totals {
  int64_t tensors = 0;
  uint64_t bytes = 0;
  int64_t parameters = 0;
};

struct checkpoint_totals {
  std::map<std::string, dtype_totals> by_dtype;  // by safetensors dtype name
  int64_t tensors = 0;
  uint64_t bytes = 0;
  int64_t parameters = 0;
  int64_t mtp_tensors = 0;
  size_t files = 0;
  std::string naming;
};

bool is_packed_fp4(const safetensors_entry& e) {
  return (e.type == dtype::i8 || e.type == dtype::u8) &&
         std::string_view(e.name).ends_with(".weight");
}

// Which spelling the checkpoint uses, from the embedding and head names.
std::string detect_naming(const checkpoint& ckpt) {
  if (ckpt.has("embed.weight")) return "official";
  if (ckpt.has("lm_head.weight")) return "transformers modules";
  if (ckpt.has("model.embed_tokens.weight")) return "transformers save_pretrained";
  return "unknown";
}

checkpoint_totals count_tensors(const checkpoint& ckpt) {
  checkpoint_totals t;
  t.files = ckpt.files().size();
  t.naming = detect_naming(ckpt);
  for (const auto& file : ckpt.files()) {
    for (const safetensors_entry& e : file->entries()) {
      const int64_t elements = e.shape.numel() * (is_packed_fp4(e) ? 2 : 1);
      dtype_totals& d = t.by_dtype[std::string(dtype_name(e.type))];
      d.tensors += 1;
      d.bytes += e.end - e.begin;
      d.parameters += elements;
      t.tensors += 1;
      t.bytes += e.end - e.begin;
      t.parameters += elements;
      if (std::string_view(e.name).starts_with("mtp.")) t.mtp_tensors += 1;
    }
  }
  return t;
}

std::string_view attention_name(attention_kind k) {
  switch (k) {
    case attention_kind::sliding:
      return "sliding";
    case attention_kind::csa:
      return "csa";
    case attention_kind::hca:
      return "hca";
  }
  return "?";
}

std::string_view router_name(router_kind k) {
  return k == router_kind::hash ? "hash" : "score";
}

// One letter per layer: attention S/C/H (sliding, CSA, HCA), router h/s (hash, score).
std::string attention_letters(const model_config& c) {
  std::string out;
  for (attention_kind k : c.layer_types)
    out += k == attention_kind::sliding ? 'S' : k == attention_kind::csa ? 'C' : 'H';
  return out;
}

std::string router_letters(const model_config& c) {
  std::string out;
  for (router_kind k : c.mlp_layer_types) out += k == router_kind::hash ? 'h' : 's';
  return out;
}

int64_t count_layers(const model_config& c, attention_kind k) {
  int64_t n = 0;
  for (attention_kind x : c.layer_types) n += x == k;
  return n;
}

int64_t count_hash_layers(const model_config& c) {
  int64_t n = 0;
  for (router_kind x : c.mlp_layer_types) n += x == router_kind::hash;
  return n;
}

nlohmann::json rope_json(const rope_config& r) {
  nlohmann::json j = {{"theta", r.theta}, {"yarn", r.yarn}};
  if (r.yarn) {
    j["factor"] = r.factor;
    j["original_max_position_embeddings"] = r.original_max_position;
    j["beta_fast"] = r.beta_fast;
    j["beta_slow"] = r.beta_slow;
    j["attention_factor"] = r.attention_factor;
  }
  return j;
}

nlohmann::json to_json(const std::string& dir, const model_config& c, const checkpoint_totals& t) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < c.layer_types.size(); ++i)
    layers.push_back({{"layer", i},
                      {"attention", attention_name(c.layer_types[i])},
                      {"compress_rate", c.compress_rate(int(i))},
                      {"router", router_name(c.mlp_layer_types[i])}});
  nlohmann::json dtypes = nlohmann::json::object();
  for (const auto& [name, d] : t.by_dtype)
    dtypes[name] = {{"tensors", d.tensors}, {"bytes", d.bytes}, {"parameters", d.parameters}};
  return {
      {"model", dir},
      {"config",
       {{"vocab_size", c.vocab_size},
        {"hidden_size", c.hidden_size},
        {"num_hidden_layers", c.num_hidden_layers},
        {"num_nextn_predict_layers", c.num_nextn_predict_layers},
        {"num_attention_heads", c.num_attention_heads},
        {"head_dim", c.head_dim},
        {"rope_head_dim", c.rope_head_dim},
        {"q_lora_rank", c.q_lora_rank},
        {"o_groups", c.o_groups},
        {"o_lora_rank", c.o_lora_rank},
        {"n_routed_experts", c.n_routed_experts},
        {"n_shared_experts", c.n_shared_experts},
        {"num_experts_per_tok", c.num_experts_per_tok},
        {"moe_intermediate_size", c.moe_intermediate_size},
        {"scoring_func", c.scoring_func},
        {"routed_scaling_factor", c.routed_scaling_factor},
        {"sliding_window", c.sliding_window},
        {"compress_rate_csa", c.compress_rate_csa},
        {"compress_rate_hca", c.compress_rate_hca},
        {"index_n_heads", c.index_n_heads},
        {"index_head_dim", c.index_head_dim},
        {"index_topk", c.index_topk},
        {"hc_mult", c.hc_mult},
        {"rope_main", rope_json(c.rope_main)},
        {"rope_compress", rope_json(c.rope_compress)},
        {"quant_method", c.quant_method},
        {"expert_dtype", c.expert_dtype}}},
      {"layers", layers},
      {"schedule", {{"attention", attention_letters(c)}, {"router", router_letters(c)}}},
      {"checkpoint",
       {{"files", t.files},
        {"naming", t.naming},
        {"tensors", t.tensors},
        {"mtp_tensors", t.mtp_tensors},
        {"bytes", t.bytes},
        {"parameters", t.parameters},
        {"by_dtype", dtypes}}},
  };
}

std::string rope_text(const rope_config& r) {
  if (!r.yarn) return fmt::format("theta {}", r.theta);
  return fmt::format("theta {}, yarn factor {} (original {}, beta {}/{})", r.theta, r.factor,
                     r.original_max_position, r.beta_fast, r.beta_slow);
}

void print_text(const std::string& dir, const model_config& c, const checkpoint_totals& t) {
  std::printf("model %s\n", dir.c_str());
  std::printf("  vocab %lld, hidden %lld, layers %lld (+%lld MTP)\n", (long long)c.vocab_size,
              (long long)c.hidden_size, (long long)c.num_hidden_layers,
              (long long)c.num_nextn_predict_layers);
  std::printf(
      "  attention: %lld heads x %lld (rope %lld), q_lora %lld, o_groups %lld x %lld, "
      "window %lld\n",
      (long long)c.num_attention_heads, (long long)c.head_dim, (long long)c.rope_head_dim,
      (long long)c.q_lora_rank, (long long)c.o_groups, (long long)c.o_lora_rank,
      (long long)c.sliding_window);
  std::printf("  compression: CSA rate %lld (indexer %lld heads x %lld, top %lld), HCA rate %lld\n",
              (long long)c.compress_rate_csa, (long long)c.index_n_heads,
              (long long)c.index_head_dim, (long long)c.index_topk, (long long)c.compress_rate_hca);
  std::printf("  experts: %lld routed (top %lld, %s, scale %g) + %lld shared, intermediate %lld\n",
              (long long)c.n_routed_experts, (long long)c.num_experts_per_tok,
              c.scoring_func.c_str(), c.routed_scaling_factor, (long long)c.n_shared_experts,
              (long long)c.moe_intermediate_size);
  std::printf("  rope: main %s; compress %s\n", rope_text(c.rope_main).c_str(),
              rope_text(c.rope_compress).c_str());
  std::printf("  quantization: %s, experts %s\n",
              c.quant_method.empty() ? "none" : c.quant_method.c_str(),
              c.expert_dtype.empty() ? "unspecified" : c.expert_dtype.c_str());
  std::printf("schedule: %lld sliding, %lld csa, %lld hca; %lld hash-routed\n",
              (long long)count_layers(c, attention_kind::sliding),
              (long long)count_layers(c, attention_kind::csa),
              (long long)count_layers(c, attention_kind::hca), (long long)count_hash_layers(c));
  std::printf("  attention %s  (S sliding, C csa, H hca)\n", attention_letters(c).c_str());
  std::printf("  router    %s  (h hash, s score)\n", router_letters(c).c_str());
  std::printf("tensors: %lld in %zu file(s), %s naming, %lld mtp\n", (long long)t.tensors, t.files,
              t.naming.c_str(), (long long)t.mtp_tensors);
  std::printf("  %-8s %10s %18s %18s\n", "dtype", "tensors", "bytes", "parameters");
  for (const auto& [name, d] : t.by_dtype)
    std::printf("  %-8s %10lld %18llu %18lld\n", name.c_str(), (long long)d.tensors,
                (unsigned long long)d.bytes, (long long)d.parameters);
  std::printf("  %-8s %10lld %18llu %18lld\n", "total", (long long)t.tensors,
              (unsigned long long)t.bytes, (long long)t.parameters);
  std::printf("parameters: %lld\n", (long long)t.parameters);
  std::printf("bytes: %llu\n", (unsigned long long)t.bytes);
}

int run_inspect(const inspect_options& o) {
  std::error_code ec;
  DSV4_CHECK(std::filesystem::is_directory(o.model, ec), "inspect: model directory {} not found",
             o.model);
  const model_config config =
      load_model_config((std::filesystem::path(o.model) / "config.json").string());
  const checkpoint ckpt = checkpoint::open(o.model);
  const checkpoint_totals totals = count_tensors(ckpt);
  if (o.json) {
    std::printf("%s\n", to_json(o.model, config, totals).dump(2).c_str());
  } else {
    print_text(o.model, config, totals);
  }
  return 0;
}

const command_registration registration(
    "inspect", "Summarize a model directory (config, layer schedule, tensors by dtype)",
    [](CLI::App& sub) {
      auto o = std::make_shared<inspect_options>();
      sub.add_option("--model", o->model, "Model directory (config.json + safetensors)")
          ->required();
      sub.add_flag("--json", o->json, "Machine-readable output");
      return [o] { return run_inspect(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
