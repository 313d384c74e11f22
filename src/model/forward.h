// The DeepSeek-V4 forward over one step of flattened tokens (see step_plan.h), written once
// against the op interface. Semantics follow docs/dsv4-model.md §3-4 and transformers'
// DeepseekV4ForCausalLM; the per-sequence state lives in the layer caches.
#pragma once

#include <vector>

#include "io/model_config.h"
#include "model/layer_cache.h"
#include "model/ops.h"
#include "model/step_plan.h"
#include "model/weights.h"

namespace dsv4 {

class model_forward {
 public:
  model_forward(const model_config& config, const model_weights& weights, ops& backend);

  // Runs the step, updating `caches` (one per layer), and returns f32 logits
  // [plan.logit_rows.size(), vocab] on the backend's device.
  tensor run(const step_plan& plan, std::vector<layer_cache>& caches);

 private:
  struct step_tensors;
  tensor attention(int layer, const tensor& x, const step_tensors& st, layer_cache& cache);
  tensor ffn(int layer, const tensor& x, const step_tensors& st);

  const model_config& cfg_;
  const model_weights& w_;
  ops& ops_;
  tensor inv_freq_main_;
  tensor inv_freq_compress_;
};

}  // namespace dsv4
