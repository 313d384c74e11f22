#include "io/linear_weight.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "io/weight_names.h"

namespace dsv4 {

namespace {

bool is_float(dtype t) {
  return t == dtype::f32 || t == dtype::bf16 || t == dtype::f16;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A located checkpoint tensor and its name, for messages.
struct named_view {
  std::string name;
  tensor_view view;
};

// The first of `suffixes` appended to `base` that the checkpoint holds.
std::optional<named_view> find_sibling(const checkpoint& ckpt, const std::string& base,
                                       std::initializer_list<std::string_view> suffixes) {
  for (std::string_view suffix : suffixes) {
    std::string name = base + std::string(suffix);
    if (ckpt.has(name)) return named_view{name, ckpt.view(name)};
  }
  return std::nullopt;
}

named_view require_sibling(const checkpoint& ckpt, const std::string& base,
                           std::initializer_list<std::string_view> suffixes) {
  if (auto found = find_sibling(ckpt, base, suffixes)) return *found;
  fail("checkpoint {}: missing tensor {}{}", ckpt.dir(), base, *suffixes.begin());
}

void check_shape(const checkpoint& ckpt, const named_view& t, const dims& expected) {
  DSV4_CHECK(t.view.shape == expected, "checkpoint {}: tensor {} has shape {}, expected {}",
             ckpt.dir(), t.name, t.view.shape.str(), expected.str());
}

void check_dtype(const checkpoint& ckpt, const named_view& t, std::initializer_list<dtype> allowed,
                 std::string_view format) {
  for (dtype d : allowed)
    if (t.view.type == d) return;
  std::string names;
  for (dtype d : allowed) names += (names.empty() ? "" : " or ") + std::string(dtype_name(d));
  fail("checkpoint {}: tensor {} has dtype {}, expected {} for {}", ckpt.dir(), t.name,
       dtype_name(t.view.type), names, format);
}

void check_scalar(const checkpoint& ckpt, const named_view& t) {
  DSV4_CHECK(t.view.numel() == 1 && t.view.rank() <= 1,
             "checkpoint {}: tensor {} has shape {}, expected a scalar ([] or [1])", ckpt.dir(),
             t.name, t.view.shape.str());
  check_dtype(ckpt, t, {dtype::f32}, "an nvfp4 global scale");
}

linear_weight load_linear(const checkpoint& ckpt, const std::string& base, int64_t out,
                          int64_t in) {
  linear_weight w;
  w.name = base + ".weight";
  w.out = out;
  w.in = in;
  const named_view weight{w.name, ckpt.view(w.name)};
  w.weight = weight.view;
  const dtype type = weight.view.type;

  if (is_float(type)) {
    w.format = weight_format::dense;
    check_shape(ckpt, weight, {out, in});
  } else if (type == dtype::f8_e4m3) {
    w.format = weight_format::fp8_block;
    check_shape(ckpt, weight, {out, in});
    const named_view scale = require_sibling(ckpt, base, {".scale", ".weight_scale_inv"});
    check_dtype(ckpt, scale, {dtype::f8_e8m0, dtype::f32}, "an fp8 block scale");
    check_shape(ckpt, scale, {ceil_div(out, 128), ceil_div(in, 128)});
    w.scale = scale.view;
  } else if (type == dtype::u8 && find_sibling(ckpt, base, {".weight_scale_2"})) {
    w.format = weight_format::nvfp4;
    DSV4_CHECK(in % 16 == 0, "checkpoint {}: tensor {}: nvfp4 needs in ({}) divisible by 16",
               ckpt.dir(), w.name, in);
    check_shape(ckpt, weight, {out, in / 2});
    const named_view scale = require_sibling(ckpt, base, {".weight_scale"});
    check_dtype(ckpt, scale, {dtype::f8_e4m3}, "an nvfp4 block scale");
    check_shape(ckpt, scale, {out, in / 16});
    const named_view scale_2 = require_sibling(ckpt, base, {".weight_scale_2"});
    check_scalar(ckpt, scale_2);
    w.scale = scale.view;
    w.scale_2 = scale_2.view;
    if (auto input_scale = find_sibling(ckpt, base, {".input_scale"})) {
      check_scalar(ckpt, *input_scale);
      w.input_scale = input_scale->view;
    }
  } else if (type == dtype::i8 || type == dtype::u8) {
    // Packed e2m1 pairs: the stored shape counts bytes, not int8 values.
    w.format = weight_format::mxfp4;
    DSV4_CHECK(in % 32 == 0, "checkpoint {}: tensor {}: mxfp4 needs in ({}) divisible by 32",
               ckpt.dir(), w.name, in);
    check_shape(ckpt, weight, {out, in / 2});
    const named_view scale = require_sibling(ckpt, base, {".scale", ".weight_scale"});
    check_dtype(ckpt, scale, {dtype::f8_e8m0}, "an mxfp4 block scale");
    check_shape(ckpt, scale, {out, in / 32});
    w.scale = scale.view;
  } else {
    fail("checkpoint {}: tensor {} has dtype {}, which is no known linear weight format",
         ckpt.dir(), w.name, dtype_name(type));
  }
  return w;
}

// Expert `ref.expert` of a stacked [E, 2I, D] gate_up_proj (half 0 = w1, 1 = w3) or [E, D, I]
// down_proj, as a dense [out, in] view into the stacked tensor.
linear_weight load_stacked(const checkpoint& ckpt, const stacked_expert_ref& ref, int64_t out,
                           int64_t in) {
  const named_view stacked{ref.name, ckpt.view(ref.name)};
  const tensor_view& v = stacked.view;
  DSV4_CHECK(is_float(v.type), "checkpoint {}: tensor {} has dtype {}, expected F32, BF16 or F16",
             ckpt.dir(), ref.name, dtype_name(v.type));
  const int64_t rows = ref.half < 0 ? out : 2 * out;
  DSV4_CHECK(v.rank() == 3 && v.shape[1] == rows && v.shape[2] == in && v.shape[0] > ref.expert,
             "checkpoint {}: tensor {} has shape {}, expected [>{}, {}, {}]", ckpt.dir(), ref.name,
             v.shape.str(), ref.expert, rows, in);
  const int64_t first_row = ref.expert * rows + (ref.half > 0 ? out : 0);
  linear_weight w;
  w.name = ref.name;
  w.format = weight_format::dense;
  w.out = out;
  w.in = in;
  w.weight = v;
  w.weight.data = static_cast<uint8_t*>(v.data) + dtype_bytes(v.type, first_row * in);
  w.weight.shape = dims{out, in};
  w.weight.strides = contiguous_strides(w.weight.shape);
  return w;
}

float scale_value(const tensor_view& scale, int64_t index) {
  if (scale.type == dtype::f32) {
    float v;  // memcpy: file offsets need not be 4-byte aligned
    std::memcpy(&v, scale.ptr<const uint8_t>() + index * 4, sizeof v);
    return v;
  }
  return e8m0_to_f32(scale.ptr<const uint8_t>()[index]);
}

}  // namespace

std::string_view weight_format_name(weight_format f) {
  switch (f) {
    case weight_format::dense:
      return "dense";
    case weight_format::fp8_block:
      return "fp8_block";
    case weight_format::mxfp4:
      return "mxfp4";
    case weight_format::nvfp4:
      return "nvfp4";
  }
  return "?";
}

linear_weight find_linear(const checkpoint& ckpt, const std::string& canonical, int64_t out,
                          int64_t in) {
  DSV4_CHECK(out > 0 && in > 0, "find_linear {}: invalid shape [{}, {}]", canonical, out, in);
  const std::vector<std::string> candidates = weight_name_candidates(canonical);
  for (const auto& base : candidates)
    if (ckpt.has(base + ".weight")) return load_linear(ckpt, base, out, in);
  stacked_expert_ref ref;
  if (stacked_expert_candidate(canonical, ref) && ckpt.has(ref.name))
    return load_stacked(ckpt, ref, out, in);
  std::vector<std::string> tried;
  for (const auto& base : candidates) tried.push_back(base + ".weight");
  if (stacked_expert_candidate(canonical, ref)) tried.push_back(ref.name);
  fail("checkpoint {}: missing tensor {}.weight (tried {})", ckpt.dir(), canonical, join(tried));
}

tensor_view find_tensor(const checkpoint& ckpt, const std::string& canonical, const dims& shape) {
  const std::vector<std::string> candidates = weight_name_candidates(canonical);
  for (const auto& name : candidates) {
    if (!ckpt.has(name)) continue;
    const named_view t{name, ckpt.view(name)};
    const bool is_index = canonical.ends_with("tid2eid");
    if (is_index)
      check_dtype(ckpt, t, {dtype::i32, dtype::i64}, "an expert index table");
    else
      check_dtype(ckpt, t, {dtype::f32, dtype::bf16, dtype::f16}, "a plain tensor");
    check_shape(ckpt, t, shape);
    return t.view;
  }
  fail("checkpoint {}: missing tensor {} (tried {})", ckpt.dir(), canonical, join(candidates));
}

bool has_tensor(const checkpoint& ckpt, const std::string& canonical) {
  for (const auto& name : weight_name_candidates(canonical))
    if (ckpt.has(name)) return true;
  return false;
}

tensor dequantize_to_f32(const linear_weight& w) {
  const int64_t out = w.out;
  const int64_t in = w.in;
  DSV4_CHECK(w.weight.data != nullptr, "dequantize {}: no weight", w.name);
  tensor result = tensor::empty(dtype::f32, {out, in});
  float* dst = result.data<float>();
  switch (w.format) {
    case weight_format::dense: {
      DSV4_CHECK(w.weight.rank() == 2 && w.weight.shape[0] == out && w.weight.shape[1] == in &&
                     w.weight.strides[1] == 1,
                 "dequantize {}: dense weight of shape {} is not a row-major [{}, {}]", w.name,
                 w.weight.shape.str(), out, in);
      const size_t row_bytes = dtype_bytes(w.weight.type, w.weight.strides[0]);
      for (int64_t r = 0; r < out; ++r)
        convert_to_f32(w.weight.type, static_cast<const uint8_t*>(w.weight.data) + r * row_bytes,
                       dst + r * in, in);
      break;
    }
    case weight_format::fp8_block: {
      const auto* q = w.weight.ptr<const uint8_t>();
      const int64_t scale_cols = ceil_div(in, 128);
      for (int64_t r = 0; r < out; ++r)
        for (int64_t c = 0; c < in; ++c)
          dst[r * in + c] =
              e4m3_to_f32(q[r * in + c]) * scale_value(w.scale, (r / 128) * scale_cols + c / 128);
      break;
    }
    case weight_format::mxfp4: {
      const auto* q = w.weight.ptr<const uint8_t>();
      const auto* s = w.scale.ptr<const uint8_t>();
      for (int64_t r = 0; r < out; ++r)
        for (int64_t c = 0; c < in; ++c)
          dst[r * in + c] =
              e2m1_to_f32(e2m1_get(q + r * (in / 2), c)) * e8m0_to_f32(s[r * (in / 32) + c / 32]);
      break;
    }
    case weight_format::nvfp4: {
      const auto* q = w.weight.ptr<const uint8_t>();
      const auto* s = w.scale.ptr<const uint8_t>();
      float global = 0;
      std::memcpy(&global, w.scale_2.data, sizeof global);  // file offsets need not be aligned
      // (code * block scale) is exact; the global scale multiplies last, as in the kernels.
      for (int64_t r = 0; r < out; ++r)
        for (int64_t c = 0; c < in; ++c)
          dst[r * in + c] = e2m1_to_f32(e2m1_get(q + r * (in / 2), c)) *
                            e4m3_to_f32(s[r * (in / 16) + c / 16]) * global;
      break;
    }
  }
  return result;
}

}  // namespace dsv4
