#include "io/synthetic_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/safetensors_stream_writer.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- tensor list (mirrors dsv4_tensor_schema.py line by line) ----

class list_builder {
 public:
  explicit list_builder(std::vector<synthetic_tensor>& out) : out_(out) {}
  int shard = 0;

  void add(std::string name, dtype t, dims shape, synthetic_kind k) {
    out_.push_back({std::move(name), t, shape, k, shard});
  }
  void fp8(const std::string& p, int64_t o, int64_t i) {
    add(p + ".weight", dtype::f8_e4m3, {o, i}, synthetic_kind::fp8_weight);
    add(p + ".scale", dtype::f8_e8m0, {(o + 127) / 128, (i + 127) / 128},
        synthetic_kind::fp8_scale);
  }
  void bf(const std::string& n, dims s, synthetic_kind k) { add(n, dtype::bf16, s, k); }
  void f32(const std::string& n, dims s, synthetic_kind k) { add(n, dtype::f32, s, k); }

 private:
  std::vector<synthetic_tensor>& out_;
};

void add_block(list_builder& b, const model_config& c, const std::string& p, attention_kind kind,
               bool hash) {
  using k = synthetic_kind;
  const int64_t d = c.hidden_size, h = c.num_attention_heads, hd = c.head_dim;
  const int64_t ql = c.q_lora_rank, g = c.o_groups, orank = c.o_lora_rank;
  const int64_t ih = c.index_n_heads, ihd = c.index_head_dim, hc = c.hc_mult;
  b.bf(p + ".attn_norm.weight", {d}, k::norm);
  b.bf(p + ".ffn_norm.weight", {d}, k::norm);
  b.fp8(p + ".attn.wq_a", ql, d);
  b.bf(p + ".attn.q_norm.weight", {ql}, k::norm);
  b.fp8(p + ".attn.wq_b", h * hd, ql);
  b.fp8(p + ".attn.wkv", hd, d);
  b.bf(p + ".attn.kv_norm.weight", {hd}, k::norm);
  b.fp8(p + ".attn.wo_a", g * orank, h * hd / g);
  b.fp8(p + ".attn.wo_b", d, g * orank);
  b.f32(p + ".attn.attn_sink", {h}, k::attn_sink);
  if (kind != attention_kind::sliding) {
    const bool csa = kind == attention_kind::csa;
    const int64_t ratio = csa ? c.compress_rate_csa : c.compress_rate_hca;
    const int64_t width = (csa ? 2 : 1) * hd;  // CSA compresses overlapping windows
    b.f32(p + ".attn.compressor.ape", {ratio, width}, k::ape);
    b.bf(p + ".attn.compressor.wkv.weight", {width, d}, k::dense_linear);
    b.bf(p + ".attn.compressor.wgate.weight", {width, d}, k::dense_linear);
    b.bf(p + ".attn.compressor.norm.weight", {hd}, k::norm);
    if (csa) {
      b.fp8(p + ".attn.indexer.wq_b", ih * ihd, ql);
      b.bf(p + ".attn.indexer.weights_proj.weight", {ih, d}, k::dense_linear);
      b.f32(p + ".attn.indexer.compressor.ape", {ratio, 2 * ihd}, k::ape);
      b.bf(p + ".attn.indexer.compressor.wkv.weight", {2 * ihd, d}, k::dense_linear);
      b.bf(p + ".attn.indexer.compressor.wgate.weight", {2 * ihd, d}, k::dense_linear);
      b.bf(p + ".attn.indexer.compressor.norm.weight", {ihd}, k::norm);
    }
  }
  for (const char* s : {"attn", "ffn"}) {
    b.f32(fmt::format("{}.hc_{}_fn", p, s), {(2 + hc) * hc, hc * d}, k::hc_fn);
    b.f32(fmt::format("{}.hc_{}_base", p, s), {(2 + hc) * hc}, k::hc_base);
    b.f32(fmt::format("{}.hc_{}_scale", p, s), {3}, k::hc_scale);
  }
  b.bf(p + ".ffn.gate.weight", {c.n_routed_experts, d}, k::dense_linear);
  if (hash)
    b.add(p + ".ffn.gate.tid2eid", dtype::i64, {c.vocab_size, c.num_experts_per_tok}, k::tid2eid);
  else
    b.f32(p + ".ffn.gate.bias", {c.n_routed_experts}, k::gate_bias);
  const int64_t inter = c.moe_intermediate_size;
  for (int64_t e = 0; e < c.n_routed_experts; ++e) {
    const struct {
      const char* w;
      int64_t o, i;
    } projections[] = {{"w1", inter, d}, {"w3", inter, d}, {"w2", d, inter}};
    for (const auto& pr : projections) {
      const std::string n = fmt::format("{}.ffn.experts.{}.{}", p, e, pr.w);
      b.add(n + ".weight", dtype::i8, {pr.o, pr.i / 2}, k::fp4_weight);
      b.add(n + ".scale", dtype::f8_e8m0, {pr.o, pr.i / 32}, k::fp4_scale);
    }
  }
  b.fp8(p + ".ffn.shared_experts.w1", inter, d);
  b.fp8(p + ".ffn.shared_experts.w3", inter, d);
  b.fp8(p + ".ffn.shared_experts.w2", d, inter);
}

// ---- random values ----

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s) {  // FNV-1a: stable across platforms and runs
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// xoshiro256**, seeded per (seed, tensor, unit) so values do not depend on the thread split.
class rng {
 public:
  rng(uint64_t seed, uint64_t tensor, uint64_t unit) {
    uint64_t x = seed ^ (tensor * 0x9e3779b97f4a7c15ull) ^ (unit * 0xd1b54a32d192ed03ull);
    for (auto& v : s_) v = splitmix64(x);
  }
  uint64_t next() {
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  // Approximately N(0,1) values, five from one draw: 12-bit indices into a table of normal
  // quantiles (4096 levels, tails at about 3.5 sigma; 16 KB, so it stays in L1). Box-Muller
  // would cost a log, a sqrt and a cosine per value; billions of expert values are drawn per
  // real-size layer.
  void normals(float* out, int64_t n, float mean, float sigma) {
    const float* q = quantiles();
    int64_t i = 0;
    for (; i + 5 <= n; i += 5) {  // the common case, without per-element bounds checks
      const uint64_t r = next();
      out[i] = mean + sigma * q[r & 0xfff];
      out[i + 1] = mean + sigma * q[(r >> 12) & 0xfff];
      out[i + 2] = mean + sigma * q[(r >> 24) & 0xfff];
      out[i + 3] = mean + sigma * q[(r >> 36) & 0xfff];
      out[i + 4] = mean + sigma * q[(r >> 48) & 0xfff];
    }
    if (i < n) {
      uint64_t r = next();
      for (; i < n; ++i, r >>= 12) out[i] = mean + sigma * q[r & 0xfff];
    }
  }

  // Phi^-1((k + 0.5) / 4096), by bisection on erfc once per process.
  static const float* quantiles() {
    static const std::vector<float> table = [] {
      std::vector<float> t(4096);
      for (int k = 0; k < 4096; ++k) {
        const double p = (k + 0.5) / 4096.0;
        double lo = -10.0, hi = 10.0;
        for (int it = 0; it < 60; ++it) {
          const double mid = 0.5 * (lo + hi);
          (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
        }
        t[size_t(k)] = float(0.5 * (lo + hi));
      }
      return t;
    }();
    return table.data();
  }

 private:
  uint64_t s_[4];
};

struct fill_params {
  float mean = 0.0f;
  float sigma = 1.0f;
};

fill_params params_for(synthetic_kind k, const dims& shape) {
  const int64_t in = shape.rank() >= 2 ? shape[shape.rank() - 1] : 1;
  switch (k) {
    case synthetic_kind::norm:
      return {1.0f, 0.1f};
    case synthetic_kind::embedding:
      return {0.0f, 0.02f};
    case synthetic_kind::dense_linear:
      return {0.0f, float(1.0 / std::sqrt(double(in)))};
    case synthetic_kind::hc_fn:
      return {0.0f, 0.02f};
    case synthetic_kind::hc_base:
      return {0.0f, 0.1f};
    case synthetic_kind::hc_scale:
      return {1.0f, 0.1f};
    case synthetic_kind::attn_sink:
      return {0.0f, 1.0f};
    case synthetic_kind::ape:
      return {0.0f, 0.02f};
    case synthetic_kind::gate_bias:
      return {0.0f, 0.01f};
    default:
      return {};
  }
}

// One tensor (or a quantized weight with its scale), produced in independent units: 128-row
// strips for FP8, rows for everything else.
struct group {
  const synthetic_tensor* weight = nullptr;
  const synthetic_tensor* scale = nullptr;  // fp8/fp4 only
  int64_t rows = 1, cols = 1;               // logical [out, in] (cols: last dim)
  int64_t rows_per_unit = 1;
  int64_t units() const { return (rows + rows_per_unit - 1) / rows_per_unit; }
  size_t unit_bytes() const {  // weight bytes of a full unit
    if (weight->kind == synthetic_kind::fp4_weight) return size_t(rows_per_unit * cols / 2);
    return size_t(dtype_bytes(weight->type, rows_per_unit * cols));
  }
  size_t scale_unit_bytes() const {
    if (scale == nullptr) return 0;
    return size_t(scale->shape[1]);  // one scale row per unit (FP8 strip / FP4 row)
  }
};

// f32_to_e4m3 for |x| <= 448 (block scales guarantee it), from the float's bits: RNE of the
// mantissa to 3 bits and a rebias of the exponent; below 2^-6 the subnormal step 2^-9. The core
// encoder's table search costs ~60 ns a value, most of the time of a real-size layer.
inline uint8_t e4m3_fast_impl(float x) {
  const float a = std::fabs(x);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (a < 0.015625f) {  // subnormal (and zero): m * 2^-9, m = RNE(a * 512) in 0..8
    return uint8_t(sign | uint8_t(std::nearbyint(a * 512.0f)));
  }
  uint32_t bits = std::bit_cast<uint32_t>(a);
  bits += 0x7ffff + ((bits >> 20) & 1);  // round to nearest even at mantissa bit 20
  uint32_t code = (bits >> 20) - ((127 - 7) << 3);
  if (code > 0x7e) code = 0x7e;  // saturate at 448 (0x7f is NaN)
  return uint8_t(sign | code);
}

void fill_fp8(const group& g, uint64_t seed, uint64_t id, int64_t unit, uint8_t* out,
              uint8_t* scale_out, std::vector<float>& buf) {
  const int64_t r0 = unit * 128, rows = std::min<int64_t>(128, g.rows - r0), cols = g.cols;
  const float sigma = float(1.0 / std::sqrt(double(cols)));
  rng r(seed, id, uint64_t(unit));
  buf.resize(size_t(rows * cols));
  r.normals(buf.data(), rows * cols, 0.0f, sigma);
  for (int64_t c0 = 0; c0 < cols; c0 += 128) {
    const int64_t c1 = std::min(cols, c0 + 128);
    float amax = 0.0f;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = c0; j < c1; ++j) amax = std::max(amax, std::fabs(buf[size_t(i * cols + j)]));
    const uint8_t sb = f32_to_e8m0_ceil(amax / 448.0f);
    scale_out[c0 / 128] = sb;
    const float inv = 1.0f / e8m0_to_f32(sb);  // a power of two: exact
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = c0; j < c1; ++j)
        out[i * cols + j] = e4m3_fast_impl(buf[size_t(i * cols + j)] * inv);
  }
}

// f32_to_e2m1 for finite values, branch-free (the core encoder's binary search is the cost of
// writing experts): the code is the count of thresholds passed, ties to the even code as in RNE
// (>= where the upper code is even). test_synthetic_checkpoint checks it against f32_to_e2m1.
inline uint8_t e2m1_fast_impl(float x) {
  const float a = std::fabs(x);
  const int code = int(a > 0.25f) + int(a >= 0.75f) + int(a > 1.25f) + int(a >= 1.75f) +
                   int(a > 2.5f) + int(a >= 3.5f) + int(a > 5.0f);
  return uint8_t(code | (std::signbit(x) ? 0x8 : 0));
}

}  // namespace

uint8_t e4m3_fast(float x) {
  return e4m3_fast_impl(x);
}

uint8_t e2m1_fast(float x) {
  return e2m1_fast_impl(x);
}

namespace {

void fill_fp4(const group& g, uint64_t seed, uint64_t id, int64_t row, uint8_t* out,
              uint8_t* scale_out) {
  const int64_t cols = g.cols;
  const float sigma = float(1.0 / std::sqrt(double(cols)));
  rng r(seed, id, uint64_t(row));
  float v[32];
  for (int64_t b = 0; b < cols / 32; ++b) {
    r.normals(v, 32, 0.0f, sigma);
    float amax = 0.0f;
    for (float x : v) amax = std::max(amax, std::fabs(x));
    const uint8_t sb = f32_to_e8m0_ceil(amax / 6.0f);
    scale_out[b] = sb;
    const float inv = 1.0f / e8m0_to_f32(sb);  // a power of two: exact
    uint8_t codes[32];
    for (int j = 0; j < 32; ++j) codes[j] = e2m1_fast_impl(v[j] * inv);
    for (int j = 0; j < 32; j += 2)  // low nibble = even element
      out[b * 16 + j / 2] = uint8_t(codes[j] | (codes[j + 1] << 4));
  }
}

void fill_plain(const group& g, const model_config& c, uint64_t seed, uint64_t id, int64_t row,
                uint8_t* out) {
  const synthetic_tensor& t = *g.weight;
  rng r(seed, id, uint64_t(row));
  if (t.kind == synthetic_kind::tid2eid) {
    auto* o = reinterpret_cast<int64_t*>(out);
    const uint64_t experts = uint64_t(std::max<int64_t>(c.n_routed_experts, 1));
    for (int64_t j = 0; j < g.cols; ++j) {
      int64_t e = 0;
      for (bool distinct = false; !distinct;) {  // top-k <= experts is validated
        e = int64_t(r.next() % experts);
        distinct = std::find(o, o + j, e) == o + j;
      }
      o[j] = e;
    }
    return;
  }
  const fill_params p = params_for(t.kind, t.shape);
  std::vector<float> v(size_t(g.cols));
  r.normals(v.data(), g.cols, p.mean, p.sigma);
  for (int64_t j = 0; j < g.cols; ++j) {
    if (t.type == dtype::bf16) {
      const uint16_t b = f32_to_bf16(v[size_t(j)]);
      std::memcpy(out + 2 * j, &b, 2);
    } else {
      std::memcpy(out + 4 * j, &v[size_t(j)], 4);
    }
  }
}

std::vector<group> make_groups(const std::vector<synthetic_tensor>& list) {
  std::vector<group> groups;
  for (size_t i = 0; i < list.size(); ++i) {
    group g;
    g.weight = &list[i];
    const dims& s = list[i].shape;
    g.cols = s.rank() == 0 ? 1 : s[s.rank() - 1];
    g.rows = s.rank() == 0 ? 1 : s.numel() / std::max<int64_t>(g.cols, 1);
    if (list[i].kind == synthetic_kind::fp8_weight || list[i].kind == synthetic_kind::fp4_weight) {
      g.scale = &list[++i];
      if (g.weight->kind == synthetic_kind::fp8_weight) g.rows_per_unit = 128;
      if (g.weight->kind == synthetic_kind::fp4_weight) g.cols *= 2;  // logical in
    }
    groups.push_back(g);
  }
  return groups;
}

// Streams one group into the writer in chunks of about 32 MB, generated in parallel.
void write_group(const group& g, const model_config& c, uint64_t seed, thread_pool& pool,
                 safetensors_stream_writer& w) {
  const uint64_t id = hash_name(g.weight->name);
  const int64_t units = g.units();
  const size_t unit_bytes = g.unit_bytes();
  const int64_t per_chunk =
      std::max<int64_t>(1, int64_t((size_t(32) << 20) / std::max<size_t>(unit_bytes, 1)));
  std::vector<uint8_t> scale(size_t(units) * g.scale_unit_bytes());
  std::vector<uint8_t> data;
  const size_t total = size_t(dtype_bytes(g.weight->type, g.weight->shape.numel()));
  for (int64_t u0 = 0; u0 < units; u0 += per_chunk) {
    const int64_t u1 = std::min(units, u0 + per_chunk);
    const size_t begin = size_t(u0) * unit_bytes;
    const size_t end = std::min(total, size_t(u1) * unit_bytes);
    data.assign(end - begin, 0);
    pool.parallel_for(u1 - u0, [&](int64_t a, int64_t b) {
      std::vector<float> buf;
      for (int64_t u = u0 + a; u < u0 + b; ++u) {
        uint8_t* out = data.data() + (size_t(u) * unit_bytes - begin);
        uint8_t* sc = scale.data() + size_t(u) * g.scale_unit_bytes();
        switch (g.weight->kind) {
          case synthetic_kind::fp8_weight:
            fill_fp8(g, seed, id, u, out, sc, buf);
            break;
          case synthetic_kind::fp4_weight:
            fill_fp4(g, seed, id, u, out, sc);
            break;
          default:
            fill_plain(g, c, seed, id, u, out);
        }
      }
    });
    w.write(data.data(), data.size());
  }
  if (g.scale != nullptr) w.write(scale.data(), scale.size());
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  DSV4_CHECK(in.good(), "make-synthetic: cannot open {}", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail("make-synthetic: {}: invalid JSON: {}", path.string(), e.what());
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  DSV4_CHECK(out.good(), "make-synthetic: cannot write {}", path.string());
}

// The source config for the first `layers` layers; per-layer arrays keep their MTP entry.
json truncate_config(json cfg, int64_t layers, const std::string& context) {
  const int64_t full = cfg.value("num_hidden_layers", int64_t(43));
  DSV4_CHECK(layers >= 1 && layers <= full,
             "make-synthetic: --layers {} out of range [1, {}] (num_hidden_layers of {})", layers,
             full, context);
  cfg["num_hidden_layers"] = layers;
  for (const char* key : {"compress_ratios", "layer_types", "mlp_layer_types"}) {
    if (!cfg.contains(key) || !cfg[key].is_array()) continue;
    const json& a = cfg[key];
    const int64_t n = int64_t(a.size());
    DSV4_CHECK(n == full || n == full + 1,
               "make-synthetic: {}: key '{}' has {} entries, expected {} or {}", context, key, n,
               full, full + 1);
    json t = json::array();
    for (int64_t i = 0; i < layers; ++i) t.push_back(a[size_t(i)]);
    if (n == full + 1) t.push_back(a.back());  // the MTP block's entry
    cfg[key] = t;
  }
  return cfg;
}

}  // namespace

std::vector<synthetic_tensor> official_tensor_list(const model_config& c,
                                                   const synthetic_layout& layout) {
  std::vector<synthetic_tensor> out;
  list_builder b(out);
  const int64_t layers = c.num_hidden_layers, d = c.hidden_size, hc = c.hc_mult;
  b.shard = 0;
  b.bf("embed.weight", {c.vocab_size, d}, synthetic_kind::embedding);
  b.shard = int(layers) + 1;
  b.bf("head.weight", {c.vocab_size, d}, synthetic_kind::embedding);
  b.bf("norm.weight", {d}, synthetic_kind::norm);
  b.f32("hc_head_fn", {hc, hc * d}, synthetic_kind::hc_fn);
  b.f32("hc_head_base", {hc}, synthetic_kind::hc_base);
  b.f32("hc_head_scale", {1}, synthetic_kind::hc_scale);
  for (int64_t l = 0; l < layers; ++l) {
    b.shard = int(l) + 1;
    add_block(b, c, fmt::format("layers.{}", l), c.layer_types[size_t(l)],
              c.mlp_layer_types[size_t(l)] == router_kind::hash);
  }
  if (layout.mtp) {
    b.shard = int(layers) + 2;
    const int64_t r = layout.mtp_compress_ratio;
    const attention_kind kind = r == 0                     ? attention_kind::sliding
                                : r == c.compress_rate_csa ? attention_kind::csa
                                                           : attention_kind::hca;
    // The MTP block is layer_id L: score-routed unless every layer is a hash layer.
    const std::string p = "mtp.0";
    add_block(b, c, p, kind, false);
    b.fp8(p + ".e_proj", d, d);
    b.fp8(p + ".h_proj", d, d);
    b.bf(p + ".enorm.weight", {d}, synthetic_kind::norm);
    b.bf(p + ".hnorm.weight", {d}, synthetic_kind::norm);
    b.bf(p + ".norm.weight", {d}, synthetic_kind::norm);
    b.f32(p + ".hc_head_fn", {hc, hc * d}, synthetic_kind::hc_fn);
    b.f32(p + ".hc_head_base", {hc}, synthetic_kind::hc_base);
    b.f32(p + ".hc_head_scale", {1}, synthetic_kind::hc_scale);
  }
  return out;
}

int synthetic_shard_count(const model_config& c, const synthetic_layout& layout) {
  return int(c.num_hidden_layers) + 2 + (layout.mtp ? 1 : 0);
}

uint64_t synthetic_tensor_bytes(const std::vector<synthetic_tensor>& tensors) {
  uint64_t total = 0;
  for (const auto& t : tensors) total += dtype_bytes(t.type, t.shape.numel());
  return total;
}

make_synthetic_result make_synthetic_checkpoint(const make_synthetic_options& o) {
  const fs::path src(o.config_path);
  json cfg;
  try {  // a wrongly typed key (e.g. a string num_hidden_layers) is a config error, not a crash
    cfg = read_json(src);
    DSV4_CHECK(cfg.is_object(), "make-synthetic: {}: not a JSON object", o.config_path);
    cfg = truncate_config(std::move(cfg), o.layers, o.config_path);
  } catch (const json::exception& e) {
    fail("make-synthetic: {}: {}", o.config_path, e.what());
  }
  const model_config c = parse_model_config(cfg, o.config_path);
  validate_model_config(c, o.config_path);
  // MXFP4 packs two codes per byte with one scale per 32 inputs.
  DSV4_CHECK(c.hidden_size % 32 == 0 && c.moe_intermediate_size % 32 == 0,
             "make-synthetic: {}: hidden_size {} and moe_intermediate_size {} must be multiples "
             "of 32 (MXFP4 scale blocks)",
             o.config_path, c.hidden_size, c.moe_intermediate_size);

  synthetic_layout layout;
  layout.mtp = o.mtp;
  if (cfg.contains("compress_ratios") && cfg["compress_ratios"].is_array() &&
      int64_t(cfg["compress_ratios"].size()) == o.layers + 1 &&
      cfg["compress_ratios"].back().is_number_integer())
    layout.mtp_compress_ratio = cfg["compress_ratios"].back().get<int64_t>();
  const std::vector<synthetic_tensor> list = official_tensor_list(c, layout);
  const int shards = synthetic_shard_count(c, layout);

  const fs::path out(o.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  DSV4_CHECK(!ec && fs::is_directory(out), "make-synthetic: cannot create --out {}: {}", o.out_dir,
             ec ? ec.message() : "not a directory");

  write_text(out / "config.json", cfg.dump(2) + "\n");
  const fs::path gen = src.parent_path() / "generation_config.json";
  if (fs::exists(gen)) {
    // Copied as text: copy_file would carry over a read-only source's permissions.
    std::ifstream in(gen, std::ios::binary);
    DSV4_CHECK(in.good(), "make-synthetic: cannot open {}", gen.string());
    std::stringstream text;
    text << in.rdbuf();
    write_text(out / "generation_config.json", text.str());
  }

  std::unique_ptr<thread_pool> own_pool;
  if (o.threads > 0) own_pool = std::make_unique<thread_pool>(o.threads);
  thread_pool& pool = own_pool ? *own_pool : thread_pool::global();

  const std::vector<group> groups = make_groups(list);
  json weight_map = json::object();
  uint64_t total = 0;
  for (int s = 0; s < shards; ++s) {
    const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards);
    std::vector<safetensors_decl> decls;
    for (const auto& t : list)
      if (t.shard == s) {
        decls.push_back({t.name, t.type, t.shape});
        weight_map[t.name] = file;
        total += dtype_bytes(t.type, t.shape.numel());
      }
    safetensors_stream_writer w((out / file).string(), std::move(decls), {{"format", "pt"}});
    for (const auto& g : groups)
      if (g.weight->shard == s) write_group(g, c, o.seed, pool, w);
    w.finish();
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_text(out / "model.safetensors.index.json", index.dump(2) + "\n");
  return {int64_t(list.size()), total, shards};
}

}  // namespace dsv4
