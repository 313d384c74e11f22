#include "io/nvfp4_checkpoint.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/checkpoint.h"
#include "io/linear_weight.h"
#include "io/safetensors_stream_writer.h"

namespace dsv4 {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr std::string_view k_index_file = "model.safetensors.index.json";

std::string strip_model_prefix(const std::string& name) {
  return name.starts_with("model.") ? name.substr(6) : name;
}

const std::regex& experts_pattern() {
  static const std::regex r(R"((layers|mtp)\.\d+\.ffn\.experts\.\d+\.w[123])");
  return r;
}

const std::regex& other_linear_pattern() {
  static const std::regex r(
      R"((layers|mtp)\.\d+\.(attn\.(wq_a|wq_b|wkv|wo_a|wo_b|compressor\.(wkv|wgate)|)"
      R"(indexer\.(wq_b|weights_proj)|indexer\.compressor\.(wkv|wgate))|)"
      R"(ffn\.shared_experts\.w[123])|mtp\.\d+\.(e_proj|h_proj))");
  return r;
}

bool is_float(dtype t) {
  return t == dtype::f32 || t == dtype::bf16 || t == dtype::f16;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// One in-scope linear module of the input and what happens to it.
struct module_plan {
  std::string base;
  linear_weight source;  // views into the input; format dense / fp8_block / mxfp4 / nvfp4
  std::vector<std::string> consumed;  // input tensor names replaced by the three nvfp4 tensors
  bool convert = false;               // false: copied (already nvfp4, or skipped)
  std::string skip_reason;            // non-empty: skipped
};

std::string first_present(const checkpoint& ckpt, const std::string& base,
                          std::initializer_list<std::string_view> suffixes) {
  for (std::string_view s : suffixes) {
    std::string name = base + std::string(s);
    if (ckpt.has(name)) return name;
  }
  return {};
}

void require_scale(const checkpoint& ckpt, const std::string& scale_name, const std::string& base,
                   std::string_view what, std::initializer_list<dtype> types, const dims& shape) {
  DSV4_CHECK(!scale_name.empty(), "checkpoint {}: {} weight {}.weight has no scale tensor",
             ckpt.dir(), what, base);
  const tensor_view v = ckpt.view(scale_name);
  DSV4_CHECK(std::find(types.begin(), types.end(), v.type) != types.end(),
             "checkpoint {}: tensor {} has dtype {}, unexpected for {} scales", ckpt.dir(),
             scale_name, dtype_name(v.type), what);
  DSV4_CHECK(v.shape == shape, "checkpoint {}: tensor {} has shape {}, expected {}", ckpt.dir(),
             scale_name, v.shape.str(), shape.str());
}

module_plan plan_module(const checkpoint& ckpt, const std::string& base) {
  module_plan p;
  p.base = base;
  linear_weight& w = p.source;
  w.name = base + ".weight";
  w.weight = ckpt.view(w.name);
  const dims& shape = w.weight.shape;
  DSV4_CHECK(shape.rank() == 2, "checkpoint {}: linear weight {} has shape {}, expected 2-D",
             ckpt.dir(), w.name, shape.str());
  w.out = shape[0];
  w.in = shape[1];
  const dtype type = w.weight.type;
  if (is_float(type)) {
    w.format = weight_format::dense;
    p.consumed = {w.name};
  } else if (type == dtype::f8_e4m3) {
    w.format = weight_format::fp8_block;
    const std::string scale = first_present(ckpt, base, {".scale", ".weight_scale_inv"});
    require_scale(ckpt, scale, base, "fp8_block", {dtype::f8_e8m0, dtype::f32},
                  {ceil_div(w.out, 128), ceil_div(w.in, 128)});
    w.scale = ckpt.view(scale);
    p.consumed = {w.name, scale};
  } else if ((type == dtype::u8 || type == dtype::i8) && ckpt.has(base + ".weight_scale_2")) {
    w.format = weight_format::nvfp4;
    w.in = 2 * shape[1];
    return p;  // copied unchanged
  } else if (type == dtype::u8 || type == dtype::i8) {
    w.format = weight_format::mxfp4;
    w.in = 2 * shape[1];
    const std::string scale = first_present(ckpt, base, {".scale", ".weight_scale"});
    DSV4_CHECK(w.in % 32 == 0, "checkpoint {}: mxfp4 weight {} has in = {}, not a multiple of 32",
               ckpt.dir(), w.name, w.in);
    require_scale(ckpt, scale, base, "mxfp4", {dtype::f8_e8m0}, {w.out, w.in / 32});
    w.scale = ckpt.view(scale);
    p.consumed = {w.name, scale};
  } else {
    fail("checkpoint {}: tensor {} has dtype {}, which is no known linear weight format",
         ckpt.dir(), w.name, dtype_name(type));
  }
  if (w.in % k_nvfp4_block != 0)
    p.skip_reason = fmt::format("in = {} is not a multiple of {}", w.in, k_nvfp4_block);
  else
    p.convert = true;
  return p;
}

std::string format_label(const linear_weight& w) {
  return w.format == weight_format::dense ? std::string(dtype_name(w.weight.type))
                                          : std::string(weight_format_name(w.format));
}

// The other projection sharing the global scale (w1 <-> w3), or "".
std::string partner_of(const std::string& base) {
  if (base.ends_with(".w1")) return base.substr(0, base.size() - 1) + "3";
  if (base.ends_with(".w3")) return base.substr(0, base.size() - 1) + "1";
  return {};
}

// dequantize_to_f32 with decode tables and threads (same values: every product is exact in f32);
// the scalar decoders compute powers per element, far too slow for a whole checkpoint.
tensor source_to_f32(const linear_weight& w) {
  if (w.format == weight_format::dense || w.format == weight_format::nvfp4)
    return dequantize_to_f32(w);
  static const std::array<float, 256> e4m3 = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[size_t(b)] = e4m3_to_f32(uint8_t(b));
    return t;
  }();
  tensor result = tensor::empty(dtype::f32, {w.out, w.in});
  float* dst = result.data<float>();
  const auto* q = w.weight.ptr<const uint8_t>();
  const auto* s = w.scale.ptr<const uint8_t>();
  const int64_t in = w.in;
  if (w.format == weight_format::fp8_block) {
    const int64_t scale_cols = ceil_div(in, 128);
    thread_pool::global().parallel_for(w.out, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t cb = 0; cb < scale_cols; ++cb) {
          const int64_t index = (r / 128) * scale_cols + cb;
          float scale = 0;
          if (w.scale.type == dtype::f32)
            std::memcpy(&scale, s + index * 4, 4);  // file offsets need not be aligned
          else
            scale = e8m0_to_f32(s[index]);
          for (int64_t c = cb * 128; c < std::min(in, cb * 128 + 128); ++c)
            dst[r * in + c] = e4m3[q[r * in + c]] * scale;
        }
    });
  } else {  // mxfp4
    static constexpr std::array<float, 16> e2m1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                   4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                   -2.0f, -3.0f, -4.0f, -6.0f};
    thread_pool::global().parallel_for(w.out, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t g = 0; g < in / 32; ++g) {
          const float scale = e8m0_to_f32(s[r * (in / 32) + g]);
          const uint8_t* bytes = q + r * (in / 2) + g * 16;
          float* out = dst + r * in + g * 32;
          for (int i = 0; i < 16; ++i) {
            out[2 * i] = e2m1[bytes[i] & 0xf] * scale;
            out[2 * i + 1] = e2m1[bytes[i] >> 4] * scale;
          }
        }
    });
  }
  return result;
}

mxfp4_source as_mxfp4(const linear_weight& w) {
  return {w.weight.ptr<const uint8_t>(), w.scale.ptr<const uint8_t>(), w.out, w.in};
}

// Global scale of a module and its w1/w3 partner (both converted), computed once per pair:
// power of two when both are MXFP4 (exact conversion), else the design's amax rule over both.
class global_scales {
 public:
  explicit global_scales(const std::map<std::string, module_plan>& plans) : plans_(plans) {}

  float get(const module_plan& p) {
    std::vector<const module_plan*> members{&p};
    const auto partner = plans_.find(partner_of(p.base));
    if (partner != plans_.end() && partner->second.convert) members.push_back(&partner->second);
    std::string key = members.size() == 2 ? p.base.substr(0, p.base.size() - 1) + "13" : p.base;
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const bool all_mxfp4 = std::all_of(members.begin(), members.end(), [](const module_plan* m) {
      return m->source.format == weight_format::mxfp4;
    });
    float scale;
    if (all_mxfp4) {
      int32_t emax = INT32_MIN;
      for (const module_plan* m : members)
        emax = std::max(emax, mxfp4_max_exponent(as_mxfp4(m->source), m->source.name));
      scale = mxfp4_global_scale(emax);
    } else {
      float amax = 0;
      for (const module_plan* m : members) {
        const tensor values = source_to_f32(m->source);
        amax = std::max(amax, nvfp4_amax(values.data<float>(), values.numel(), m->source.name));
      }
      scale = nvfp4_global_scale(amax);
    }
    cache_.emplace(std::move(key), scale);
    return scale;
  }

 private:
  const std::map<std::string, module_plan>& plans_;
  std::map<std::string, float> cache_;
};

bool is_power_of_two(float v) {
  int e = 0;
  return v > 0.0f && std::isfinite(v) && std::frexp(v, &e) == 0.5f;
}

nvfp4_module_report quantize_module(const module_plan& p, float global_scale,
                                    nvfp4_matrix& result) {
  const linear_weight& w = p.source;
  nvfp4_module_report r;
  r.module = p.base;
  r.source_format = format_label(w);
  r.out = w.out;
  r.in = w.in;
  r.global_scale = global_scale;
  const tensor reference = source_to_f32(w);
  if (w.format == weight_format::mxfp4 && is_power_of_two(global_scale)) {
    mxfp4_conversion c = convert_mxfp4_to_nvfp4(as_mxfp4(w), global_scale, w.name);
    result = std::move(c.matrix);
    r.requantized = c.requantized;
    r.inexact_blocks = c.inexact_blocks;
  } else {
    result = quantize_nvfp4(reference.data<float>(), w.out, w.in, global_scale, w.name);
  }
  r.blocks = w.out * w.in / k_nvfp4_block;
  tensor got = tensor::empty(dtype::f32, {w.out, w.in});
  dequantize_nvfp4(result, got.data<float>());
  r.error =
      measure_quantization_error(reference.data<float>(), got.data<float>(), reference.numel());
  if (w.format != weight_format::mxfp4 || !is_power_of_two(global_scale)) {
    // Blocks whose values differ from the source (mxfp4 counts its own).
    int64_t inexact = 0;
    const float* a = reference.data<float>();
    const float* b = got.data<float>();
    for (int64_t blk = 0; blk < r.blocks; ++blk)
      for (int64_t i = 0; i < k_nvfp4_block; ++i)
        if (a[blk * k_nvfp4_block + i] != b[blk * k_nvfp4_block + i]) {
          ++inexact;
          break;
        }
    r.inexact_blocks = inexact;
    r.requantized = r.blocks;
  }
  return r;
}

json exclude_modules(nvfp4_scope scope) {
  if (scope == nvfp4_scope::experts)  // NVIDIA's list for its experts-only release
    return json::array({"*.attn.*", "*.attn_norm.*", "*.ffn.shared_experts.*", "*.ffn.gate.*",
                        "*.ffn_norm.*", "embed.weight", "head.weight", "*.hc_*", "*.h_proj.*",
                        "*.e_proj.*", "*.enorm.*", "*.hnorm.*", "mtp.*.norm.*", "norm.weight"});
  return json::array({"*.attn_norm.*", "*.attn.q_norm.*", "*.attn.kv_norm.*", "*.attn.attn_sink",
                      "*.compressor.ape", "*.compressor.norm.*", "*.ffn.gate.*", "*.ffn_norm.*",
                      "embed.weight", "head.weight", "*.hc_*", "*.enorm.*", "*.hnorm.*",
                      "mtp.*.norm.*", "norm.weight"});
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  DSV4_CHECK(in.good(), "cannot read {}", path.string());
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    fail("{}: invalid JSON: {}", path.string(), e.what());
  }
}

void write_json(const fs::path& path, const json& value) {
  std::ofstream out(path);
  out << value.dump(2) << "\n";
  DSV4_CHECK(out.good(), "cannot write {}", path.string());
}

// config.json: an FP8 block config stays (FP8 weights remain) and gains NVIDIA's
// "moe_quant_algo": "NVFP4"; otherwise quantization_config becomes ModelOpt's NVFP4 entry.
json output_config(json config, nvfp4_scope scope, bool fp8_remains) {
  json& q = config["quantization_config"];
  const bool fp8_config = q.is_object() && q.value("quant_method", "") == "fp8";
  if (fp8_config && fp8_remains) {
    q["moe_quant_algo"] = "NVFP4";
  } else {
    q = json{{"quant_method", "modelopt"},
             {"quant_algo", "NVFP4"},
             {"group_size", k_nvfp4_block},
             {"kv_cache_quant_algo", nullptr},
             {"exclude_modules", exclude_modules(scope)}};
  }
  return config;
}

void copy_regular_file(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  DSV4_CHECK(!ec, "cannot copy {} to {}: {}", from.string(), to.string(), ec.message());
}

void prepare_out_dir(const fs::path& in, const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    DSV4_CHECK(fs::is_directory(out, ec) && fs::is_empty(out, ec),
               "output {} exists and is not an empty directory", out.string());
    DSV4_CHECK(!fs::equivalent(in, out, ec), "output {} is the input directory", out.string());
  }
  fs::create_directories(out, ec);
  DSV4_CHECK(!ec, "cannot create output directory {}: {}", out.string(), ec.message());
}

}  // namespace

nvfp4_scope parse_nvfp4_scope(const std::string& name) {
  if (name == "experts") return nvfp4_scope::experts;
  if (name == "all-linear") return nvfp4_scope::all_linear;
  fail("unknown quantization scope '{}' (expected experts or all-linear)", name);
}

std::string_view nvfp4_scope_name(nvfp4_scope scope) {
  return scope == nvfp4_scope::experts ? "experts" : "all-linear";
}

bool nvfp4_in_scope(const std::string& module, nvfp4_scope scope) {
  const std::string name = strip_model_prefix(module);
  if (std::regex_match(name, experts_pattern())) return true;
  return scope == nvfp4_scope::all_linear && std::regex_match(name, other_linear_pattern());
}

nvfp4_convert_result convert_checkpoint_to_nvfp4(
    const nvfp4_convert_options& options,
    const std::function<void(const nvfp4_module_report&)>& on_module,
    const std::function<void(const std::string&, const std::string&)>& on_skip) {
  const fs::path in_dir(options.in_dir), out_dir(options.out_dir);
  std::error_code ec;
  DSV4_CHECK(fs::is_directory(in_dir, ec), "input {}: not a directory", options.in_dir);
  DSV4_CHECK(fs::is_regular_file(in_dir / "config.json", ec), "input {}: no config.json",
             options.in_dir);
  const checkpoint ckpt = checkpoint::open(options.in_dir);

  // Plan every in-scope module from the headers before writing anything.
  std::map<std::string, module_plan> plans;
  std::set<std::string> consumed;
  bool fp8_remains = false;
  nvfp4_convert_result result;
  for (const std::string& name : ckpt.names()) {
    if (!name.ends_with(".weight")) continue;
    const std::string base = name.substr(0, name.size() - 7);
    const tensor_view v = ckpt.view(name);
    if (!nvfp4_in_scope(base, options.scope)) {
      if (v.type == dtype::f8_e4m3) fp8_remains = true;
      continue;
    }
    module_plan p = plan_module(ckpt, base);
    if (!p.skip_reason.empty()) {
      ++result.skipped;
      if (p.source.format == weight_format::fp8_block) fp8_remains = true;
      if (on_skip) on_skip(base, p.skip_reason);
    }
    if (p.source.format == weight_format::nvfp4) ++result.already_nvfp4;
    if (p.convert) consumed.insert(p.consumed.begin(), p.consumed.end());
    plans.emplace(base, std::move(p));
  }
  const auto to_convert =
      std::count_if(plans.begin(), plans.end(), [](const auto& kv) { return kv.second.convert; });
  if (plans.empty())
    fail(
        "input {}: no linear weights in scope {} (expected official or save_pretrained names "
        "such as layers.N.ffn.experts.E.w1.weight; transformers module names with stacked "
        "experts are not supported)",
        options.in_dir, nvfp4_scope_name(options.scope));
  if (to_convert == 0)
    fail("input {}: nothing to quantize in scope {}: {} in-scope modules already NVFP4, {} skipped",
         options.in_dir, nvfp4_scope_name(options.scope), result.already_nvfp4, result.skipped);

  prepare_out_dir(in_dir, out_dir);
  global_scales scales(plans);
  json weight_map = json::object();
  std::set<std::string> shard_files;
  for (const auto& file : ckpt.files()) {
    const std::string shard = fs::path(file->path()).filename().string();
    shard_files.insert(shard);
    std::vector<safetensors_decl> decls;
    for (const safetensors_entry& e : file->entries()) {
      if (consumed.contains(e.name) && !e.name.ends_with(".weight")) continue;
      if (consumed.contains(e.name)) {
        const module_plan& p = plans.at(e.name.substr(0, e.name.size() - 7));
        decls.push_back({p.base + ".weight", dtype::u8, {p.source.out, p.source.in / 2}});
        decls.push_back({p.base + ".weight_scale",
                         dtype::f8_e4m3,
                         {p.source.out, p.source.in / k_nvfp4_block}});
        decls.push_back({p.base + ".weight_scale_2", dtype::f32, dims{}});
      } else {
        decls.push_back({e.name, e.type, e.shape});
      }
    }
    for (const auto& d : decls) weight_map[d.name] = shard;
    safetensors_stream_writer writer((out_dir / shard).string(), decls, file->metadata());
    for (const safetensors_entry& e : file->entries()) {
      result.bytes_in += e.end - e.begin;
      if (consumed.contains(e.name) && !e.name.ends_with(".weight")) continue;
      if (!consumed.contains(e.name)) {
        const tensor_view v = file->view(e);
        writer.write(v.data, e.end - e.begin);
        ++result.tensors_copied;
        continue;
      }
      const module_plan& p = plans.at(e.name.substr(0, e.name.size() - 7));
      nvfp4_matrix m;
      const nvfp4_module_report r = quantize_module(p, scales.get(p), m);
      writer.write(m.codes.data(), m.codes.size());
      writer.write(m.scales.data(), m.scales.size());
      writer.write(&m.global_scale, sizeof m.global_scale);
      ++result.quantized;
      const double rms = r.error.relative_rms;
      if (rms > result.worst_relative_rms || result.worst_module.empty()) {
        result.worst_relative_rms = rms;
        result.worst_module = r.module;
      }
      result.sum_squared_reference += r.error.sum_squared_reference;
      result.sum_squared_error += r.error.sum_squared_error;
      if (on_module) on_module(r);
    }
    writer.finish();
    result.bytes_out += writer.file_size();
    ++result.shards;
  }

  // Index (when the input has one), configs, other files.
  if (fs::exists(in_dir / k_index_file, ec)) {
    uint64_t total = 0;
    for (const std::string& shard : shard_files) {
      const auto f = safetensors_file::open((out_dir / shard).string());
      for (const auto& e : f->entries()) total += e.end - e.begin;
    }
    write_json(out_dir / k_index_file,
               json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
  }
  const bool experts_only = options.scope == nvfp4_scope::experts;
  write_json(out_dir / "config.json",
             output_config(read_json(in_dir / "config.json"), options.scope, fp8_remains));
  json layers = json::object();
  for (const auto& [base, p] : plans)
    if (p.convert || p.source.format == weight_format::nvfp4)
      layers[base] = json{{"quant_algo", "NVFP4"}, {"group_size", k_nvfp4_block}};
  write_json(out_dir / "hf_quant_config.json",
             json{{"producer",
                   {{"name", "dsv4"},
                    {"version", fmt::format("dsv4-nvfp4-{} (dsv4 quantize)",
                                            experts_only ? "experts" : "all-linear")}}},
                  {"quantization",
                   {{"quant_algo", "MIXED_PRECISION"},
                    {"kv_cache_quant_algo", nullptr},
                    {"group_size", k_nvfp4_block},
                    {"quantized_layers", layers},
                    {"exclude_modules", exclude_modules(options.scope)}}}});
  for (const auto& entry : fs::directory_iterator(in_dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (shard_files.contains(name) || name == k_index_file || name == "config.json" ||
        name == "hf_quant_config.json")
      continue;
    copy_regular_file(entry.path(), out_dir / name);
  }
  return result;
}

}  // namespace dsv4
