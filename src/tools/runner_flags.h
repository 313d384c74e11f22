// Runner options shared by the subcommands that load a model (generate, logits, chat).
#pragma once

#include <CLI/CLI.hpp>

namespace dsv4::tools {

// Adds --cuda-graph on|off (default on): decode steps as captured CUDA graphs on the cuda device
// (runner_options::cuda_graph); no effect on the cpu.
void add_cuda_graph_option(CLI::App& sub, bool& enabled);

}  // namespace dsv4::tools
