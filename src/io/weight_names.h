// Tensor names: one canonical spelling (the official checkpoint's, e.g. `layers.3.attn.wq_a`,
// `embed.weight`) resolved against the spellings checkpoints actually use:
//   official:                 layers.N.attn.kv_norm.weight, embed.weight, hc_head_fn, head.weight
//   transformers save_pretrained (5.x): the official names under a `model.` prefix, except
//                             head.weight (no prefix), model.embed_tokens.weight,
//                             model.hc_head.hc_{fn,base,scale}, model.layers.N.attn.norm.weight
//                             (= kv_norm); experts stay per-expert official names
//   transformers modules (state_dict): model.layers.N.self_attn.q_a_proj.weight, ...
//                             mlp.experts.gate_up_proj [E, 2I, D] / down_proj [E, D, I] stacked
// Canonical names used by the model:
//   embed.weight  head.weight  norm.weight  hc_head_{fn,base,scale}
//   layers.N.{attn_norm,ffn_norm}.weight  layers.N.hc_{attn,ffn}_{fn,base,scale}
//   layers.N.attn.{wq_a,wq_b,wkv,wo_a,wo_b}  (linear modules: .weight plus format siblings)
//   layers.N.attn.{q_norm,kv_norm}.weight  layers.N.attn.attn_sink
//   layers.N.attn.compressor.{wkv,wgate}  .compressor.{ape,norm.weight}
//   layers.N.attn.indexer.{wq_b,weights_proj}  .indexer.compressor.{wkv,wgate,ape,norm.weight}
//   layers.N.ffn.gate.{weight,bias,tid2eid}  layers.N.ffn.experts.E.{w1,w2,w3}
//   layers.N.ffn.shared_experts.{w1,w2,w3}
#pragma once

#include <string>
#include <vector>

namespace dsv4 {

// Every name under which the canonical tensor (or linear module, without `.weight`) may be
// stored, most likely first. For modules the caller appends `.weight`, `.scale`, ... itself.
std::vector<std::string> weight_name_candidates(const std::string& canonical);

// If `canonical` is a routed expert projection (`layers.N.ffn.experts.E.wK`), the transformers
// stacked tensor that holds it: name (`model.layers.N.mlp.experts.gate_up_proj` or
// `...down_proj`), the expert index, and for gate_up the half (0 = w1 rows [0, I), 1 = w3 rows
// [I, 2I)). Returns false otherwise.
struct stacked_expert_ref {
  std::string name;
  int64_t expert = 0;
  int half = -1;  // -1 for down_proj (w2)
};
bool stacked_expert_candidate(const std::string& canonical, stacked_expert_ref& out);

}  // namespace dsv4
