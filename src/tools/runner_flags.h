// Runner options shared by the subcommands that load a model (generate, logits, chat).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace dsv4::tools {

// Adds --cuda-graph on|off (default on): decode steps as captured CUDA graphs on the cuda device
// (runner_options::cuda_graph); no effect on the cpu.
void add_cuda_graph_option(CLI::App& sub, bool& enabled);
// Adds --activations auto|bf16|f32 (default auto: bf16 on cuda, f32 on cpu); `value` keeps the
// string, "auto" meaning runner_options::activations unset.
void add_activations_option(CLI::App& sub, std::string& value);

// Adds --kv-cache-dtype auto|fp8 (default auto: pools in the activation dtype); `value` keeps
// the string for parse_kv_cache_dtype (cache_options::kv_dtype).
void add_kv_cache_dtype_option(CLI::App& sub, std::string& value);

}  // namespace dsv4::tools
