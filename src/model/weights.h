// The DeepSeek-V4 weights, resolved by canonical name from a checkpoint (any accepted spelling
// and format, see io/weight_names.h and io/linear_weight.h) and prepared by a backend. Small
// tensors (norms, hc, sinks, ape, biases) are uploaded as f32; tid2eid as i32.
#pragma once

#include <memory>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/ops.h"

namespace dsv4 {

using linear_ptr = std::unique_ptr<prepared_linear>;

struct compressor_weights {
  linear_ptr wkv;    // [(overlap ? 2 : 1) * head_dim, hidden]
  linear_ptr wgate;  // same
  tensor ape;        // [rate, width]
  tensor norm;       // [head_dim]
};

struct attention_weights {
  attention_kind kind = attention_kind::sliding;
  linear_ptr wq_a, wq_b, wkv, wo_a, wo_b;
  tensor q_norm, kv_norm, sinks;
  compressor_weights compressor;  // CSA / HCA
  // CSA indexer
  linear_ptr index_wq_b;          // [index_heads * index_head_dim, q_lora_rank]
  linear_ptr index_weights_proj;  // [index_heads, hidden]
  compressor_weights index_compressor;
};

struct ffn_weights {
  router_kind router = router_kind::score;
  linear_ptr gate;  // [experts, hidden]
  tensor bias;      // [experts] f32 (score routers)
  tensor tid2eid;   // [vocab, top_k] i32 (hash routers)
  std::unique_ptr<prepared_experts> experts;
  linear_ptr shared_w1, shared_w3, shared_w2;
};

struct layer_weights {
  tensor attn_norm, ffn_norm;
  tensor hc_attn_fn, hc_attn_base, hc_attn_scale;
  tensor hc_ffn_fn, hc_ffn_base, hc_ffn_scale;
  attention_weights attn;
  ffn_weights ffn;
};

struct model_weights {
  tensor embed;  // [vocab, hidden] f32
  linear_ptr head;
  tensor norm;
  tensor hc_head_fn, hc_head_base, hc_head_scale;
  std::vector<layer_weights> layers;
};

// Loads every tensor of the main model (MTP weights are not loaded here). Errors name the tensor.
model_weights load_model_weights(const checkpoint& ckpt, const model_config& config, ops& backend);

}  // namespace dsv4
