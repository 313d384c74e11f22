// The DeepSeek-V4 forward over one step of flattened tokens (see step_plan.h), written once
// against the op interface. Semantics follow docs/dsv4-model.md §3-4 and transformers'
// DeepseekV4ForCausalLM; the per-sequence state lives in the layer caches.
#pragma once

#include <string_view>
#include <vector>

#include "io/model_config.h"
#include "model/layer_cache.h"
#include "model/ops.h"
#include "model/step_plan.h"
#include "model/weights.h"

namespace dsv4 {

// exact: the checkpoint's weights with f32 activations, as transformers computes (the oracle).
// official: additionally the quantize-dequantize steps of the official reference
// (docs/dsv4-model.md §3.7): FP8 activations before FP8/FP4 linears, FP8 KV (non-RoPE dims),
// Hadamard + FP4 indexer q and keys, routed experts weighted before the quantized w2.
enum class precision_mode : uint8_t { exact, official };
// "exact" / "official"; throws on anything else.
precision_mode parse_precision_mode(std::string_view name);
std::string_view precision_mode_name(precision_mode mode);

class model_forward {
 public:
  model_forward(const model_config& config, const model_weights& weights, ops& backend,
                precision_mode precision = precision_mode::exact);
  precision_mode precision() const { return precision_; }

  // Runs the step, updating `caches` (one per layer), and returns f32 logits
  // [plan.logit_rows.size(), vocab] on the backend's device.
  tensor run(const step_plan& plan, std::vector<layer_cache>& caches);

 private:
  struct step_tensors;
  tensor attention(int layer, const tensor& x, const step_tensors& st, layer_cache& cache);
  tensor ffn(int layer, const tensor& x, const step_tensors& st);
  // Whether this mode quantizes the input of a linear whose checkpoint weight has format f.
  bool quantizes_input(weight_format f) const;
  // The input of a linear with weight format f: x, or in the official mode for an FP8/FP4
  // weight x's FP8 fake-quantized copy, made at the first use and kept in `quantized`.
  const tensor& linear_input(const tensor& x, weight_format f, tensor& quantized,
                             const step_tensors& st);

  const model_config& cfg_;
  const model_weights& w_;
  ops& ops_;
  precision_mode precision_ = precision_mode::exact;
  router_score router_score_ = router_score::sqrtsoftplus;  // parsed once from the config
  tensor inv_freq_main_;
  tensor inv_freq_compress_;
};

}  // namespace dsv4
