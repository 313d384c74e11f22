// Synthetic checkpoints in the official DeepSeek-V4 layout: the tensor list of the official
// release (names, dtypes, shapes as in ../shared/tools/dsv4_tensor_schema.py, docs §2.2) for a
// model_config, and a writer that fills it with random values of realistic scale (FP8 E4M3 with
// E8M0 128x128 block scales, MXFP4 routed experts, BF16 norms/embeddings, F32 hc/sink/ape/bias,
// I64 tid2eid), so real-size runs need no download.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/model_config.h"

namespace dsv4 {

// How a tensor's values are drawn (and, for quantized weights, how its sibling scale is made).
enum class synthetic_kind : uint8_t {
  fp8_weight,    // F8_E4M3 [out, in]; the next tensor in the list is its fp8_scale
  fp8_scale,     // F8_E8M0 [ceil(out/128), ceil(in/128)]
  fp4_weight,    // I8 [out, in/2] packed e2m1; the next tensor is its fp4_scale
  fp4_scale,     // F8_E8M0 [out, in/32]
  norm,          // BF16, 1 + 0.1 N(0,1)
  embedding,     // BF16 embed/head, N(0, 0.02)
  dense_linear,  // BF16 [out, in], N(0, 1/sqrt(in))
  hc_fn,         // F32, N(0, 0.02)
  hc_base,       // F32, N(0, 0.1)
  hc_scale,      // F32, 1 + 0.1 N(0,1)
  attn_sink,     // F32, N(0, 1)
  ape,           // F32, N(0, 0.02)
  gate_bias,     // F32, N(0, 0.01)
  tid2eid,       // I64 [vocab, top-k], each row distinct experts
};

struct synthetic_tensor {
  std::string name;
  dtype type = dtype::f32;
  dims shape;
  synthetic_kind kind = synthetic_kind::norm;
  int shard = 0;  // 0: embed, 1..L: layer i-1, L+1: head/norm/hc_head, L+2: MTP
};

struct synthetic_layout {
  bool mtp = true;                 // include the mtp.0 block
  int64_t mtp_compress_ratio = 0;  // the trailing compress_ratios entry (0 in the release)
};

// The official tensor list for `config` (all config.num_hidden_layers layers), in the order of
// the schema generator: embed, head, norm, hc_head_*, layers.*, mtp.0.*. Quantized weights are
// immediately followed by their scale.
std::vector<synthetic_tensor> official_tensor_list(const model_config& config,
                                                   const synthetic_layout& layout);
// Number of shards the list uses (L + 2, plus 1 with MTP).
int synthetic_shard_count(const model_config& config, const synthetic_layout& layout);
uint64_t synthetic_tensor_bytes(const std::vector<synthetic_tensor>& tensors);

struct make_synthetic_options {
  std::string config_path;  // an official-style config.json
  int64_t layers = 0;       // first N layers (1..num_hidden_layers)
  bool mtp = false;
  uint64_t seed = 0;
  std::string out_dir;
  int threads = 0;  // <= 0: the global pool
};

struct make_synthetic_result {
  int64_t tensors = 0;
  uint64_t bytes = 0;  // tensor bytes
  int shards = 0;
};

// Writes DIR/config.json (num_hidden_layers = N, compress_ratios / layer_types truncated, the
// MTP entry kept), generation_config.json when the source directory has one, the shards
// model-0000k-of-0000n.safetensors and model.safetensors.index.json. Values depend only on the
// seed and tensor names (not on threads). Throws dsv4::error with context on bad input.
make_synthetic_result make_synthetic_checkpoint(const make_synthetic_options& options);

// The branch-free e2m1 encoder used for expert values (equal to f32_to_e2m1 for finite input).
uint8_t e2m1_fast(float x);
// The bit-level e4m3 encoder used for FP8 weights (equal to f32_to_e4m3 for |x| <= 448).
uint8_t e4m3_fast(float x);

}  // namespace dsv4
