#include "tools/runner_flags.h"

#include <string>

namespace dsv4::tools {

void add_cuda_graph_option(CLI::App& sub, bool& enabled) {
  sub.add_option_function<std::string>(
         "--cuda-graph", [&enabled](const std::string& v) { enabled = v == "on"; },
         "on (default) or off: decode steps as captured CUDA graphs (cuda device)")
      ->check(CLI::IsMember({"on", "off"}));
}

}  // namespace dsv4::tools
