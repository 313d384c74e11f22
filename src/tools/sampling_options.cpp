#include "tools/sampling_options.h"

namespace dsv4::tools {

void add_sampling_options(CLI::App& sub, sampling_params& params) {
  sub.add_option("--temperature", params.temperature, "0 = greedy")->capture_default_str();
  sub.add_option("--top-k", params.top_k, "0 = off");
  sub.add_option("--top-p", params.top_p, "1 = off");
  sub.add_option("--seed", params.seed, "Sampling seed");
}

}  // namespace dsv4::tools
