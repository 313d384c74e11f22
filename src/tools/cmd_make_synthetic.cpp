// dsv4 make-synthetic: writes a checkpoint in the official DeepSeek-V4 layout and dtypes (first N
// layers of a config, MTP block optional) with random values of realistic scale, so real-size
// runs need no download. Data is streamed shard by shard; memory stays small.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "io/synthetic_checkpoint.h"
#include "tools/command.h"

namespace dsv4::tools {
namespace {

int run_make_synthetic(const make_synthetic_options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const make_synthetic_result r = make_synthetic_checkpoint(o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %lld tensors, %llu bytes (%.2f GB) in %d shards, %.1f s\n",
              o.out_dir.c_str(), static_cast<long long>(r.tensors),
              static_cast<unsigned long long>(r.bytes), double(r.bytes) / 1e9, r.shards, seconds);
  return 0;
}

const command_registration registration(
    "make-synthetic",
    "Write a random checkpoint in the official layout (first N layers of a config)",
    [](CLI::App& sub) {
      auto o = std::make_shared<make_synthetic_options>();
      sub.add_option("--config", o->config_path, "Official-style config.json")->required();
      sub.add_option("--layers", o->layers, "Number of layers to write (1..num_hidden_layers)")
          ->required();
      sub.add_option("--out", o->out_dir, "Output directory (created)")->required();
      sub.add_flag("--mtp", o->mtp, "Also write the MTP block (mtp.0.*)");
      sub.add_option("--seed", o->seed, "Random seed (values depend only on it)");
      sub.add_option("--threads", o->threads, "Worker threads (default: all cores)");
      return [o] { return run_make_synthetic(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
