#include "engine/model_runner.h"

#include <algorithm>
#include <filesystem>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#ifdef DSV4_HAVE_CUDA
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_info.h"
#endif

namespace dsv4 {

std::unique_ptr<ops> make_backend(const std::string& device, const std::string& activations) {
  DSV4_CHECK(activations.empty() || activations == "bf16" || activations == "f32",
             "unknown activation dtype '{}' (bf16 or f32)", activations);
  if (device == "cpu") {
    DSV4_CHECK(activations.empty() || activations == "f32",
               "device cpu: activations are f32 only (asked for {})", activations);
    return std::make_unique<cpu::cpu_ops>();
  }
#ifdef DSV4_HAVE_CUDA
  if (device == "cuda") {
    const auto devices = cuda::list_devices();
    DSV4_CHECK(!devices.empty(), "device cuda: no CUDA device is visible");
    DSV4_CHECK(cuda::is_supported(devices[0]),
               "device cuda: {} (compute capability {}.{}) is not supported; the kernels are built "
               "for sm_90a (H100/H200)",
               devices[0].name, devices[0].major, devices[0].minor);
    return std::make_unique<cuda::cuda_ops>(0, activations == "f32" ? dtype::f32 : dtype::bf16);
  }
  fail("unknown device '{}' (this build has: cpu, cuda)", device);
#else
  fail("unknown or unavailable device '{}' (this build has: cpu)", device);
#endif
}

size_t backend_memory_bytes(const ops& backend) {
#ifdef DSV4_HAVE_CUDA
  if (auto* c = dynamic_cast<const cuda::cuda_ops*>(&backend)) return c->allocated_bytes();
#endif
  (void)backend;
  return 0;
}

precision_mode default_precision(const model_config& config, const std::string& device) {
  return device == "cuda" && config.quant_method == "fp8" ? precision_mode::official
                                                          : precision_mode::exact;
}

std::unique_ptr<model_runner> model_runner::load(const std::string& model_dir,
                                                 const runner_options& options) {
  namespace fs = std::filesystem;
  DSV4_CHECK(fs::is_directory(model_dir), "model directory {} does not exist", model_dir);
  std::unique_ptr<model_runner> r(new model_runner());
  r->config_ = load_model_config((fs::path(model_dir) / "config.json").string());
  r->checkpoint_ = checkpoint::open(model_dir);
  r->backend_ = make_backend(options.device, options.activations.value_or(""));
#ifdef DSV4_HAVE_CUDA
  if (auto* c = dynamic_cast<cuda::cuda_ops*>(r->backend_.get())) {
    c->set_decode_kernels(options.decode_kernels);
    c->set_repack_experts(options.repack_experts);
    c->set_repack_dense(options.repack_dense);
  }
#endif
  r->weights_ = load_model_weights(r->checkpoint_, r->config_, *r->backend_);
  const precision_mode precision =
      options.precision.value_or(default_precision(r->config_, options.device));
  cache_options cache = options.cache;
  // The indexer keys are exactly FP4 values only in the official mode (hadamard_fp4).
  cache.indexer_fp4 = cache.indexer_fp4 && precision == precision_mode::official;
  r->cache_ = std::make_unique<kv_cache>(r->config_, *r->backend_, cache);
  r->forward_ = std::make_unique<model_forward>(r->config_, r->weights_, *r->backend_, precision);
  r->use_graphs_ = options.cuda_graph;
  return r;
}

tensor model_runner::step(const std::vector<sequence_chunk>& chunks) {
  for (const auto& c : chunks)
    for (int32_t id : c.ids)
      DSV4_CHECK(id >= 0 && id < config_.vocab_size,
                 "sequence {}: token id {} out of range [0, {})", c.seq, id, config_.vocab_size);
  // A one-token chunk asks for one logit row whether or not all_logits is set.
  const bool decode = use_graphs_ && std::all_of(chunks.begin(), chunks.end(),
                                                 [](const auto& c) { return c.ids.size() == 1; });
  const step_plan plan = cache_->plan(chunks, decode);
  tensor logits =
      decode ? decode_step(plan) : backend_->download(forward_->run(plan, cache_->layers()));
  cache_->commit(chunks);
  return logits;
}

tensor model_runner::decode_step(const step_plan& plan) {
  if (auto it = graphs_.find(plan.tokens); it != graphs_.end()) {
    decode_graph& g = *it->second;
    const std::vector<int64_t> layout = g.st.layout;
    forward_->upload_plan(plan, g.st);
    if (g.st.layout == layout) {
      g.graph->replay();
      return backend_->download(g.logits);
    }
    graphs_.erase(it);  // new shapes (not expected with padded tables): a new graph
  }
  auto g = std::make_unique<decode_graph>();
  forward_->upload_plan(plan, g->st);
  tensor host;
  int runs = 0;
  g->graph = backend_->capture([&] {
    tensor l = forward_->compute(g->st, cache_->layers());
    if (runs++ == 0)
      host = backend_->download(l);  // the eager run is this step
    else
      g->logits = std::move(l);  // the graph's output buffer
  });
  if (!g->graph) {  // no graphs on this backend: eager from now on
    use_graphs_ = false;
    graphs_.clear();
    return backend_->download(forward_->compute(g->st, cache_->layers()));
  }
  graphs_.emplace(plan.tokens, std::move(g));
  return host;
}

}  // namespace dsv4
