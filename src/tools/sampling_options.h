// The sampling options shared by the subcommands that generate (generate, chat).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/sampler.h"

namespace dsv4::tools {

// Adds --temperature, --top-k, --top-p and --seed, bound to `params`.
void add_sampling_options(CLI::App& sub, sampling_params& params);

}  // namespace dsv4::tools
