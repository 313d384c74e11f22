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

}  // namespace dsv4::tools
