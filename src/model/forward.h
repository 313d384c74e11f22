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

// The step plan on the device: every plan array in one i32 buffer, refreshed by one upload_to per
// step; the tensors below are views into it. Kept across steps by a caller that replays a captured
// graph (the graph reads its addresses): upload_plan reuses the buffer when the plan's shapes are
// unchanged, so a decode batch of fixed shapes (padded block tables) always gets the same one.
struct step_tensors {
  int64_t tokens = 0;
  int64_t logits = 0;  // rows of logits
  int64_t block_size = 128;
  tensor ids, positions, window_write_rows, window_rows;
  tensor identity_rows;  // [T] 0..T-1 (official mode: gather_rows makes copies)
  tensor hc_rows;        // [T * hc]: t for each of token t's hc residual streams
  tensor logit_rows;     // [logits * hc]: rows of the [T * hc, D] residual for the final collapse
  struct compressed {
    tensor state_base, emit_rows, n_visible, token_seq, block_table;
  };
  compressed csa, hca;

  std::vector<int64_t> layout;  // the shapes the buffer was laid out for
  tensor buffer;                // [total] i32 on the device
  tensor host;                  // [total] i32 host image of buffer
};

class model_forward {
 public:
  model_forward(const model_config& config, const model_weights& weights, ops& backend,
                precision_mode precision = precision_mode::exact);
  precision_mode precision() const { return precision_; }

  // Runs the step, updating `caches` (one per layer), and returns f32 logits
  // [plan.logit_rows.size(), vocab] on the backend's device. Same as upload_plan + compute.
  tensor run(const step_plan& plan, std::vector<layer_cache>& caches);
  // Validates the plan and copies it into `st` (ordered with the backend's device work).
  void upload_plan(const step_plan& plan, step_tensors& st);
  // The step's device work only: no upload, no download, no host read of device data; the
  // launches depend only on st's shapes. Capturable as a graph.
  tensor compute(const step_tensors& st, std::vector<layer_cache>& caches);

 private:
  tensor attention(int layer, const tensor& x, const step_tensors& st, layer_cache& cache);
  // xq: x's FP8 copy if the caller has it (official mode), else empty.
  tensor ffn(int layer, const tensor& x, tensor xq, const step_tensors& st);
  // Whether this mode quantizes the input of a linear whose checkpoint weight has format f.
  bool quantizes_input(weight_format f) const;
  // The input of a linear with weight format f: x, or in the official mode for an FP8/FP4
  // weight x's FP8 fake-quantized copy, made at the first use and kept in `quantized`.
  // ops.linear of an input for weight w: in official mode through linear_input and
  // linear_fp8_input when w is FP8/FP4 (quantized caches the FP8 copy of x between calls).
  tensor project(const tensor& x, const prepared_linear& w, tensor& quantized,
                 const step_tensors& st);
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
