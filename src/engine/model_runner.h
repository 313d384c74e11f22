// Owns a loaded model (checkpoint mapping, config, backend, prepared weights, caches) and runs
// steps of chunks from several sequences. Logits come back to the host as f32.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/kv_cache.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/forward.h"
#include "model/ops.h"
#include "model/weights.h"

namespace dsv4 {

struct runner_options {
  std::string device = "cpu";
  cache_options cache;
  // exact (what the transformers oracle computes) or official (the official reference's FP8/FP4
  // quantize-dequantize steps, docs/dsv4-model.md §3.7). Unset: see default_precision.
  std::optional<precision_mode> precision;
  // Decode steps (every chunk one token) as captured graphs, one per token count, where the
  // backend has graphs (CUDA); prefill steps and backends without graphs run eagerly.
  bool cuda_graph = true;
  // The decode kernels for steps of <= 64 tokens (cuda_ops::set_decode_kernels); off: the general
  // kernels everywhere.
  bool decode_kernels = true;
  // CUDA: repack the routed experts' 4-bit weights at load for the decode / prefill kernels
  // (cuda_ops::set_repack_experts; taken only where src/backends/cuda/expert_layout.h allows).
  // Off, or DSV4_CUDA_REPACK=0 in the environment: the checkpoint layout.
  bool repack_experts = true;
  // CUDA: repack dense NVFP4 linears at load for linear_decode / linear_gemm
  // (cuda_ops::set_repack_dense; taken only where src/backends/cuda/dense_layout.h allows).
  // Off, or DSV4_CUDA_REPACK_DENSE=0 in the environment: the checkpoint layout.
  bool repack_dense = true;
  // Activation storage on the GPU: "bf16" or "f32" (f32 accumulation either way). Unset: bf16 on
  // cuda. The CPU backend is f32 only.
  std::optional<std::string> activations;
};

// The precision a runner uses when none is asked for: official for an official FP8 checkpoint on
// the GPU (how the release is meant to run), exact otherwise (the CPU reference stays the
// oracle's).
precision_mode default_precision(const model_config& config, const std::string& device);

class model_runner {
 public:
  static std::unique_ptr<model_runner> load(const std::string& model_dir,
                                            const runner_options& options);

  const model_config& config() const { return config_; }
  const ops& backend() const { return *backend_; }
  precision_mode precision() const { return forward_->precision(); }
  kv_cache& cache() { return *cache_; }
  int add_sequence() { return cache_->add_sequence(); }
  void release_sequence(int seq) { cache_->release_sequence(seq); }

  // One forward step; returns host logits [rows, vocab] for each chunk's last token (or every
  // token of chunks with all_logits), in chunk order. Token ids are validated before any state
  // changes.
  tensor step(const std::vector<sequence_chunk>& chunks);
  // Decode graphs captured so far (one per token count in use); 0 on backends without graphs.
  size_t captured_graphs() const { return graphs_.size(); }
  // Operations in the decode graph of `tokens` tokens (0 if none).
  size_t graph_nodes(int64_t tokens) const {
    const auto it = graphs_.find(tokens);
    return it == graphs_.end() ? 0 : it->second->graph->node_count();
  }

 private:
  // A decode step of T tokens as a graph: the plan buffer it reads, the logits it writes.
  struct decode_graph {
    step_tensors st;
    std::unique_ptr<captured_graph> graph;
    tensor logits;
  };
  model_runner() = default;
  // Runs a decode plan (padded block tables) through the graph of its token count, capturing it
  // on first use (that step runs eagerly); returns host logits.
  tensor decode_step(const step_plan& plan);
  model_config config_;
  checkpoint checkpoint_;
  std::unique_ptr<ops> backend_;
  model_weights weights_;
  std::unique_ptr<kv_cache> cache_;
  std::unique_ptr<model_forward> forward_;
  bool use_graphs_ = false;  // options.cuda_graph, until the backend turns out to have none
  std::map<int64_t, std::unique_ptr<decode_graph>> graphs_;
};

// Makes the backend named by `device` ("cpu"; "cuda" when built with it) with the activation
// dtype `activations` ("bf16" or "f32"; empty: the device's default, bf16 on cuda).
std::unique_ptr<ops> make_backend(const std::string& device, const std::string& activations = {});
// Device memory held by a GPU backend (weights, caches, live activations); 0 for the CPU.
size_t backend_memory_bytes(const ops& backend);

}  // namespace dsv4
