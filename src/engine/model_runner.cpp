#include "engine/model_runner.h"

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
  r->weights_ = load_model_weights(r->checkpoint_, r->config_, *r->backend_);
  r->cache_ = std::make_unique<kv_cache>(r->config_, *r->backend_, options.cache);
  r->forward_ = std::make_unique<model_forward>(
      r->config_, r->weights_, *r->backend_,
      options.precision.value_or(default_precision(r->config_, options.device)));
  return r;
}

tensor model_runner::step(const std::vector<sequence_chunk>& chunks) {
  for (const auto& c : chunks)
    for (int32_t id : c.ids)
      DSV4_CHECK(id >= 0 && id < config_.vocab_size,
                 "sequence {}: token id {} out of range [0, {})", c.seq, id, config_.vocab_size);
  const step_plan plan = cache_->plan(chunks);
  tensor logits = forward_->run(plan, cache_->layers());
  cache_->commit(chunks);
  return backend_->download(logits);
}

}  // namespace dsv4
