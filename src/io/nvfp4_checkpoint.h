// Converts a checkpoint directory (official or transformers save_pretrained spelling; BF16/F16/F32,
// FP8 128x128 blocks, MXFP4) to NVIDIA's NVFP4 layout (dsv4-model.md §7), streaming one tensor at a
// time: the output has the input's shards (same file names, same tensor order), and a quantized
// module `B` becomes `B.weight` U8 [out, in/2], `B.weight_scale` F8_E4M3 [out, in/16] and
// `B.weight_scale_2` F32 [] (its `.scale` / `.weight_scale_inv` dropped); every other tensor is
// copied byte for byte. w1 and w3 of an expert (routed or shared) share one weight_scale_2.
// No `.input_scale` is written: it needs activation calibration, which this tool does not do
// (the engine does not use it; NVIDIA's checkpoints carry it for W4A4 engines).
//
// Scopes (names after an optional `model.` prefix):
//   experts     (layers|mtp).N.ffn.experts.E.w{1,2,3}                       (as NVIDIA's release)
//   all_linear  experts + (layers|mtp).N.attn.{wq_a,wq_b,wkv,wo_a,wo_b,compressor.{wkv,wgate},
//               indexer.{wq_b,weights_proj},indexer.compressor.{wkv,wgate}},
//               (layers|mtp).N.ffn.shared_experts.w{1,2,3}, mtp.N.{e_proj,h_proj}
//               (not the router `ffn.gate`, `head`, `embed`: routing and logits stay as stored).
// A module already in NVFP4 is copied unchanged; one whose `in` is not a multiple of 16 is copied
// and reported as skipped. Writes config.json (quantization_config: see nvfp4_checkpoint.cpp),
// hf_quant_config.json, model.safetensors.index.json when the input has one, and copies the
// directory's other regular files (tokenizer, generation config, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "io/nvfp4_quantizer.h"

namespace dsv4 {

enum class nvfp4_scope : uint8_t { experts, all_linear };
nvfp4_scope parse_nvfp4_scope(const std::string& name);  // "experts" | "all-linear"
std::string_view nvfp4_scope_name(nvfp4_scope scope);

// True when `name` (a module, without `.weight`) is quantized in `scope`.
bool nvfp4_in_scope(const std::string& module, nvfp4_scope scope);

struct nvfp4_module_report {
  std::string module;         // as stored (e.g. layers.3.ffn.experts.7.w1)
  std::string source_format;  // dense dtype name (BF16, F32, ...), fp8_block, mxfp4
  int64_t out = 0;
  int64_t in = 0;
  float global_scale = 0;
  quantization_error error;  // against the exactly dequantized source
  int64_t blocks = 0;
  int64_t requantized = 0;  // mxfp4 sources: blocks outside the exact range
  int64_t inexact_blocks = 0;
};

struct nvfp4_convert_result {
  int64_t quantized = 0;       // modules converted
  int64_t already_nvfp4 = 0;   // in-scope modules copied as they were
  int64_t skipped = 0;         // in-scope modules whose shape does not allow nvfp4
  int64_t tensors_copied = 0;  // other tensors copied
  int64_t shards = 0;
  uint64_t bytes_in = 0;  // tensor bytes
  uint64_t bytes_out = 0;
  double worst_relative_rms = 0;
  std::string worst_module;
  double sum_squared_error = 0;  // over all quantized modules, for an overall relative RMS
  double sum_squared_reference = 0;
};

struct nvfp4_convert_options {
  std::string in_dir;
  std::string out_dir;  // created; must not exist or be empty
  nvfp4_scope scope = nvfp4_scope::experts;
};

// `on_module` is called after each converted module; `on_skip(module, reason)` for each skipped
// one. Throws dsv4::error (naming the directory, file or tensor) on bad input; a partially
// written output directory is left in place.
nvfp4_convert_result convert_checkpoint_to_nvfp4(
    const nvfp4_convert_options& options,
    const std::function<void(const nvfp4_module_report&)>& on_module = {},
    const std::function<void(const std::string&, const std::string&)>& on_skip = {});

}  // namespace dsv4
