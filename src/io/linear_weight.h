// Linear-layer weights in their checkpoint formats, found by canonical module name.
//   dense:     weight F32/BF16/F16 [out, in]
//   fp8_block: weight F8_E4M3 [out, in] + scale [ceil(out/128), ceil(in/128)] (F8_E8M0 or F32;
//              also spelled weight_scale_inv); w = fp8 * scale
//   mxfp4:     weight I8/U8 [out, in/2] (two e2m1 per byte along in, low nibble = even element)
//              + scale F8_E8M0 [out, in/32]; w = e2m1 * scale
//   nvfp4:     weight U8 [out, in/2] + weight_scale F8_E4M3 [out, in/16] + weight_scale_2 F32
//              scalar (+ input_scale F32 scalar, kept for the GPU); w = e2m1 * ws * ws2
//   stacked:   a slice of transformers' experts.gate_up_proj / down_proj (dense)
// Views point into the mmapped checkpoint; they stay valid while the checkpoint lives.
#pragma once

#include <string>

#include "core/tensor.h"
#include "io/checkpoint.h"

namespace dsv4 {

enum class weight_format : uint8_t { dense, fp8_block, mxfp4, nvfp4 };
std::string_view weight_format_name(weight_format f);

struct linear_weight {
  std::string name;  // name of the weight tensor as found in the checkpoint
  weight_format format = weight_format::dense;
  int64_t out = 0;
  int64_t in = 0;
  tensor_view weight;       // for dense: [out, in] (possibly a slice of a stacked tensor)
  tensor_view scale;        // fp8_block / mxfp4 / nvfp4 (weight_scale)
  tensor_view scale_2;      // nvfp4 only
  tensor_view input_scale;  // nvfp4 only, may be empty (data == nullptr)
};

// Finds the linear module `canonical` (e.g. "layers.3.attn.wq_a") in any accepted spelling and
// format, and checks dtypes and shapes against [out, in]. Errors name the tensor and what was
// expected, e.g. "checkpoint DIR: tensor layers.3.attn.wq_a.weight has shape [8, 4], expected
// [16, 4]" or "... missing tensor layers.3.attn.wq_a.weight".
linear_weight find_linear(const checkpoint& ckpt, const std::string& canonical, int64_t out,
                          int64_t in);

// Finds a plain tensor (norm weight, bias, sink, ape, hc fn, tid2eid, embed, head) by canonical
// name in any accepted spelling and checks its shape; any float dtype is accepted for float
// tensors, I32/I64 for tid2eid.
tensor_view find_tensor(const checkpoint& ckpt, const std::string& canonical, const dims& shape);
bool has_tensor(const checkpoint& ckpt, const std::string& canonical);

// Dequantizes to a new f32 [out, in] tensor (exact: every format's products are exact in f32).
tensor dequantize_to_f32(const linear_weight& w);

}  // namespace dsv4
