// dsv4 quantize: converts a BF16 / FP8 / MXFP4 checkpoint to NVIDIA's NVFP4 layout (routed experts,
// or every linear projection but the router and the head), one tensor at a time, and prints each
// converted module's error against its exactly dequantized source. Rules: io/nvfp4_quantizer.h;
// layout and scopes: io/nvfp4_checkpoint.h.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "core/error.h"
#include "io/nvfp4_checkpoint.h"
#include "tools/command.h"

namespace dsv4::tools {
namespace {

struct quantize_options {
  std::string model;
  std::string out;
  std::string format;
  std::string scope = "experts";
  bool quiet = false;
};

int run_quantize(const quantize_options& o) {
  DSV4_CHECK(o.format == "nvfp4", "unknown quantization format '{}' (supported: nvfp4)", o.format);
  nvfp4_convert_options c;
  c.in_dir = o.model;
  c.out_dir = o.out;
  c.scope = parse_nvfp4_scope(o.scope);
  const auto t0 = std::chrono::steady_clock::now();
  // The table's header comes with its first row, so that an input refused before any module
  // (not a checkpoint, no such directory) prints only its error.
  bool header_printed = false;
  const auto on_module = [&](const nvfp4_module_report& r) {
    if (o.quiet) return;
    if (!header_printed) {
      std::printf("%-48s %-9s %-13s %11s %11s %s\n", "module", "source", "shape", "rel_rms",
                  "max_abs", "inexact blocks");
      header_printed = true;
    }
    const std::string shape = fmt::format("[{}, {}]", r.out, r.in);
    std::printf("%-48s %-9s %-13s %11.4e %11.4e %lld/%lld\n", r.module.c_str(),
                r.source_format.c_str(), shape.c_str(), r.error.relative_rms, r.error.max_abs,
                static_cast<long long>(r.inexact_blocks), static_cast<long long>(r.blocks));
  };
  const auto on_skip = [](const std::string& module, const std::string& reason) {
    std::printf("skipped %s: %s (copied unchanged)\n", module.c_str(), reason.c_str());
  };
  const nvfp4_convert_result r = convert_checkpoint_to_nvfp4(c, on_module, on_skip);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double overall =
      r.sum_squared_reference > 0 ? std::sqrt(r.sum_squared_error / r.sum_squared_reference) : 0.0;
  std::printf(
      "quantized %lld modules to nvfp4 (scope %s); %lld already nvfp4, %lld skipped, %lld other "
      "tensors copied\n",
      static_cast<long long>(r.quantized), std::string(nvfp4_scope_name(c.scope)).c_str(),
      static_cast<long long>(r.already_nvfp4), static_cast<long long>(r.skipped),
      static_cast<long long>(r.tensors_copied));
  std::printf("relative rms: overall %.4e, worst %.4e (%s)\n", overall, r.worst_relative_rms,
              r.worst_module.c_str());
  std::printf("wrote %s: %d shards, %.3f GB (input tensors %.3f GB) in %.1f s\n", o.out.c_str(),
              int(r.shards), double(r.bytes_out) / 1e9, double(r.bytes_in) / 1e9, seconds);
  return 0;
}

const command_registration registration(
    "quantize", "Convert a BF16/FP8/MXFP4 checkpoint to NVIDIA's NVFP4 layout", [](CLI::App& sub) {
      auto o = std::make_shared<quantize_options>();
      sub.add_option("--model", o->model, "Input checkpoint directory")->required();
      sub.add_option("--out", o->out, "Output directory (created; must be empty)")->required();
      sub.add_option("--format", o->format, "Target format: nvfp4")->required();
      sub.add_option("--scope", o->scope,
                     "experts (routed experts, as NVIDIA's release) or all-linear (also "
                     "attention, compressor, indexer and shared-expert projections)");
      sub.add_flag("--quiet", o->quiet, "Print only skips and the summary");
      return [o] { return run_quantize(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
