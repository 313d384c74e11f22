#include "model/weights.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dsv4 {

namespace {

struct loader {
  const checkpoint& ckpt;
  const model_config& cfg;
  ops& backend;

  linear_ptr linear(const std::string& name, int64_t out, int64_t in) {
    return backend.prepare_linear(find_linear(ckpt, name, out, in));
  }
  tensor f32(const std::string& name, const dims& shape) {
    return backend.upload_f32(find_tensor(ckpt, name, shape));
  }

  compressor_weights compressor(const std::string& prefix, int64_t rate, int64_t head_dim,
                                bool overlap) {
    const int64_t width = (overlap ? 2 : 1) * head_dim;
    compressor_weights c;
    c.wkv = linear(prefix + ".wkv", width, cfg.hidden_size);
    c.wgate = linear(prefix + ".wgate", width, cfg.hidden_size);
    c.ape = f32(prefix + ".ape", {rate, width});
    c.norm = f32(prefix + ".norm.weight", {head_dim});
    return c;
  }

  attention_weights attention(int layer) {
    const std::string p = fmt::format("layers.{}.attn", layer);
    const int64_t d = cfg.head_dim;
    const int64_t heads = cfg.num_attention_heads;
    attention_weights a;
    a.kind = cfg.layer_types[layer];
    a.wq_a = linear(p + ".wq_a", cfg.q_lora_rank, cfg.hidden_size);
    a.q_norm = f32(p + ".q_norm.weight", {cfg.q_lora_rank});
    a.wq_b = linear(p + ".wq_b", heads * d, cfg.q_lora_rank);
    a.wkv = linear(p + ".wkv", d, cfg.hidden_size);
    a.kv_norm = f32(p + ".kv_norm.weight", {d});
    a.wo_a = linear(p + ".wo_a", cfg.o_groups * cfg.o_lora_rank, heads * d / cfg.o_groups);
    a.wo_b = linear(p + ".wo_b", cfg.hidden_size, cfg.o_groups * cfg.o_lora_rank);
    a.sinks = f32(p + ".attn_sink", {heads});
    if (a.kind != attention_kind::sliding) {
      const bool overlap = a.kind == attention_kind::csa;
      a.compressor = compressor(p + ".compressor", cfg.compress_rate(layer), d, overlap);
    }
    if (a.kind == attention_kind::csa) {
      const int64_t ih = cfg.index_n_heads;
      const int64_t id = cfg.index_head_dim;
      a.index_wq_b = linear(p + ".indexer.wq_b", ih * id, cfg.q_lora_rank);
      a.index_weights_proj = linear(p + ".indexer.weights_proj", ih, cfg.hidden_size);
      a.index_compressor =
          compressor(p + ".indexer.compressor", cfg.compress_rate(layer), id, /*overlap=*/true);
    }
    return a;
  }

  ffn_weights ffn(int layer) {
    const std::string p = fmt::format("layers.{}.ffn", layer);
    const int64_t e = cfg.n_routed_experts;
    const int64_t inter = cfg.moe_intermediate_size;
    const int64_t hidden = cfg.hidden_size;
    ffn_weights f;
    f.router = cfg.mlp_layer_types[layer];
    f.gate = linear(p + ".gate", e, hidden);
    if (f.router == router_kind::hash) {
      const tensor_view table =
          find_tensor(ckpt, p + ".gate.tid2eid", {cfg.vocab_size, cfg.num_experts_per_tok});
      // Stored as I64 (official) or I32; the kernels take i32. Out-of-range ids are a checkpoint
      // error, caught here rather than as a wild read later.
      tensor ids32 = tensor::empty(dtype::i32, table.shape);
      const int64_t n = table.numel();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = table.type == dtype::i64 ? table.ptr<const int64_t>()[i]
                                                   : table.ptr<const int32_t>()[i];
        DSV4_CHECK(v >= 0 && v < e, "checkpoint {}: tensor {}.gate.tid2eid holds expert {} (of {})",
                   ckpt.dir(), p, v, e);
        ids32.data<int32_t>()[i] = int32_t(v);
      }
      f.tid2eid = backend.upload(ids32.view());
    } else {
      f.bias = has_tensor(ckpt, p + ".gate.bias") ? f32(p + ".gate.bias", {e})
                                                  : backend.zeros(dtype::f32, {e});
    }
    std::vector<linear_weight> w1, w3, w2;
    for (int64_t i = 0; i < e; ++i) {
      const std::string ep = fmt::format("{}.experts.{}", p, i);
      w1.push_back(find_linear(ckpt, ep + ".w1", inter, hidden));
      w3.push_back(find_linear(ckpt, ep + ".w3", inter, hidden));
      w2.push_back(find_linear(ckpt, ep + ".w2", hidden, inter));
    }
    f.experts = backend.prepare_experts(w1, w3, w2);
    f.shared_w1 = linear(p + ".shared_experts.w1", inter, hidden);
    f.shared_w3 = linear(p + ".shared_experts.w3", inter, hidden);
    f.shared_w2 = linear(p + ".shared_experts.w2", hidden, inter);
    return f;
  }

  layer_weights layer(int i) {
    const std::string p = fmt::format("layers.{}", i);
    const int64_t hc = cfg.hc_mult;
    const int64_t mix = (2 + hc) * hc;
    layer_weights l;
    l.attn_norm = f32(p + ".attn_norm.weight", {cfg.hidden_size});
    l.ffn_norm = f32(p + ".ffn_norm.weight", {cfg.hidden_size});
    l.hc_attn_fn = f32(p + ".hc_attn_fn", {mix, hc * cfg.hidden_size});
    l.hc_attn_base = f32(p + ".hc_attn_base", {mix});
    l.hc_attn_scale = f32(p + ".hc_attn_scale", {3});
    l.hc_ffn_fn = f32(p + ".hc_ffn_fn", {mix, hc * cfg.hidden_size});
    l.hc_ffn_base = f32(p + ".hc_ffn_base", {mix});
    l.hc_ffn_scale = f32(p + ".hc_ffn_scale", {3});
    l.attn = attention(i);
    l.ffn = ffn(i);
    return l;
  }
};

}  // namespace

model_weights load_model_weights(const checkpoint& ckpt, const model_config& config, ops& backend) {
  loader ld{ckpt, config, backend};
  model_weights w;
  w.embed = ld.f32("embed.weight", {config.vocab_size, config.hidden_size});
  w.head = ld.linear("head", config.vocab_size, config.hidden_size);
  w.norm = ld.f32("norm.weight", {config.hidden_size});
  w.hc_head_fn = ld.f32("hc_head_fn", {config.hc_mult, config.hc_mult * config.hidden_size});
  w.hc_head_base = ld.f32("hc_head_base", {config.hc_mult});
  w.hc_head_scale = ld.f32("hc_head_scale", {1});
  for (int i = 0; i < config.num_hidden_layers; ++i) w.layers.push_back(ld.layer(i));
  return w;
}

}  // namespace dsv4
