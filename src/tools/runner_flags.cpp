#include "tools/runner_flags.h"

#include <string>

namespace dsv4::tools {

void add_cuda_graph_option(CLI::App& sub, bool& enabled) {
  sub.add_option_function<std::string>(
         "--cuda-graph", [&enabled](const std::string& v) { enabled = v == "on"; },
         "on (default) or off: decode steps as captured CUDA graphs (cuda device)")
      ->check(CLI::IsMember({"on", "off"}));
}

void add_activations_option(CLI::App& sub, std::string& value) {
  sub.add_option("--activations", value,
                 "Activation storage: auto (bf16 on cuda, f32 on cpu), bf16 or f32")
      ->check(CLI::IsMember({"auto", "bf16", "f32"}));
}

void add_kv_cache_dtype_option(CLI::App& sub, std::string& value) {
  sub.add_option("--kv-cache-dtype", value,
                 "Window and compressed KV storage: auto (the activation dtype) or fp8 (FP8 "
                 "records, 584 bytes per 512-dim row; cuda only, rounds KV as --precision "
                 "official does)")
      ->check(CLI::IsMember({"auto", "fp8"}));
}

}  // namespace dsv4::tools
